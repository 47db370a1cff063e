#!/usr/bin/env bash
# deps.sh — installs what jobscope needs to build and test on Debian 12, if
# missing.  Idempotent; quiet when everything is there.
#   ./deps.sh          build dependencies
#   ./deps.sh --test   also what the tests use (servers, clients)
set -e
build_pkgs="gcc make pkg-config clang-format libcmocka-dev libcurl4-openssl-dev librabbitmq-dev libjansson-dev python3 libmicrohttpd-dev libsqlite3-dev libzstd-dev zlib1g-dev libsnappy-dev scdoc clang libbpf-dev bpftool libpcre2-dev"
test_pkgs="prometheus tmux coop-computing-tools sysstat python3-psutil prometheus-process-exporter rabbitmq-server amqp-tools python3-pika victoria-metrics clang libclang-rt-dev debhelper dpkg-dev fakeroot valgrind faketime time chromium chromium-driver"
test_pkgs="$test_pkgs openmpi-bin"       # mpirun for tests/integration/82_dropin_mpi.sh
test_pkgs="$test_pkgs python3-yaml"      # kickstart records read as YAML (tests/helpers/ks_record.py)
# a whole Slurm cluster on loopback (tests/integration/93_slurm.sh), the SPANK plugin's spank.h
test_pkgs="$test_pkgs slurm-wlm slurmd slurmctld slurmdbd libslurm-dev munge mariadb-server libpmix-dev"
pkgs=$build_pkgs
command -v npm >/dev/null || pkgs="$pkgs npm"    # web/ assets (uPlot) and browser tests
[ "${1:-}" = "--test" ] && pkgs="$pkgs $test_pkgs"
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $pkgs 2>/dev/null | awk '$NF!="installed"{print $1}')
for p in $pkgs; do dpkg-query -W "$p" >/dev/null 2>&1 || missing="$missing $p"; done
missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ -n "${missing// /}" ]; then
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    echo "deps.sh: installing $missing" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
