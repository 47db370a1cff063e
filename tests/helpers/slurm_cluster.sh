# slurm_cluster.sh — sourced by tests/integration/9x_slurm*.sh: a whole
# single-node Slurm cluster on loopback inside $T (munged, mariadb, slurmdbd,
# slurmctld, slurmd; Debian's slurm-wlm 22.05), started once per test file and
# stopped by the EXIT trap.  Free ports, its own munge socket, state, spool
# and log directories: nothing is shared with a site's Slurm or another test.
#
#   slurm_start [PLUGSTACK_LINE]   start everything (PLUGSTACK_LINE goes into
#                                  plugstack.conf); 77 = skip, with the reason
#   SLURM_CONF                     exported: sbatch/srun/sacct/scontrol use it
#   slurm_wait_jobs JOBID...       until every job has left the queue (120 s)
#   submit NAME SBATCH_ARGS...     sbatch into $T/out; the job id: jobid NAME
#   slurm_stop                     (registered in the EXIT trap)
#
# The configuration is what a site runs: proctrack/cgroup, task/cgroup with
# ConstrainRAMSpace (a step past its memory is killed by the kernel and
# recorded OUT_OF_MEMORY), jobacct_gather/cgroup polling every second (with it
# cgroups: each task gets a cgroup of its own in every controller, which
# jobscope attach then reads),
# accounting through slurmdbd into mariadb.
source "$ROOT/tests/helpers/publish_servers.sh" # free_port, _js_add_trap

_slurm_pids=""
slurm_stop() {
    local p
    for p in $_slurm_pids; do kill "$p" 2>/dev/null; done
    for p in $_slurm_pids; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    _slurm_pids=""
    # this cluster's slurmstepds (daemons of their own, which outlive slurmd):
    # the slurmstepd processes whose environment names this cluster's slurm.conf
    for p in /proc/[0-9]*; do
        [ -n "${SLURM_DIR:-}" ] && [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] &&
            tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_DIR/slurm.conf" &&
            kill -9 "${p#/proc/}" 2>/dev/null
    done
    # the cgroups slurmd made for this cluster's jobs (cgroup v1: one tree per
    # controller; uid dirs are emptied when their jobs end)
    local d
    for d in /sys/fs/cgroup/*/slurm_"$SLURM_NODE" /sys/fs/cgroup/*/slurm; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    return 0
}

# _slurm_wait_for WHAT CMD...: until CMD succeeds (30 s)
_slurm_wait_for() {
    local what=$1 i
    shift
    for i in $(seq 150); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "    $what did not come up" >&2
    return 1
}

slurm_start() {
    local p
    for p in munged mungekey mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch sacct; do
        command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
            { echo "    skip: $p not installed (./deps.sh --test)" >&2; return 77; }
    done
    [ "$(id -u)" = 0 ] || { echo "    skip: slurmd must run as root" >&2; return 77; }
    export PATH=$PATH:/usr/sbin
    local S=$T/slurm
    SLURM_DIR=$S
    mkdir -p "$S"/{state,spool,log,munge,db,run}
    chmod 755 "$T" "$S"
    SLURM_NODE=$(hostname -s)
    _js_add_trap slurm_stop

    # munge: its own key and socket
    mungekey -c -k "$S/munge/munge.key" >/dev/null 2>&1 || return 1
    munged -f --key-file="$S/munge/munge.key" --socket="$S/munge/munge.sock" \
        --pid-file="$S/munge/munged.pid" --log-file="$S/log/munged.log" \
        --seed-file="$S/munge/seed" >/dev/null 2>&1 || { echo "    munged failed"; return 1; }
    _slurm_pids="$(cat "$S/munge/munged.pid") $_slurm_pids"

    # mariadb on a free port, a slurm user for slurmdbd
    local dbport
    dbport=$(free_port)
    mariadb-install-db --no-defaults --datadir="$S/db" --user=root --auth-root-authentication-method=normal \
        >"$S/log/db-install.log" 2>&1 || { echo "    mariadb-install-db failed"; tail -5 "$S/log/db-install.log"; return 1; }
    mariadbd --no-defaults --datadir="$S/db" --user=root --bind-address=127.0.0.1 --port="$dbport" \
        --socket="$S/run/db.sock" --pid-file="$S/run/db.pid" --skip-log-bin \
        --innodb-buffer-pool-size=32M --innodb-log-file-size=16M >"$S/log/db.log" 2>&1 &
    _slurm_pids="$! $_slurm_pids"
    _slurm_wait_for mariadb mariadb --no-defaults -S "$S/run/db.sock" -uroot -e 'select 1' || return 1
    mariadb --no-defaults -S "$S/run/db.sock" -uroot -e \
        "create user 'slurm'@'127.0.0.1' identified by 'slurmpw'; grant all on *.* to 'slurm'@'127.0.0.1';" ||
        return 1

    local dbd ctl sd
    dbd=$(free_port)
    ctl=$(free_port)
    sd=$(free_port)
    cat >"$S/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd
SlurmUser=root
LogFile=$S/log/slurmdbd.log
PidFile=$S/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$dbport
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$S/slurmdbd.conf"
    local mem cpus
    cpus=$(nproc)
    mem=$(awk '/MemTotal/{print int($2/1024) - 1024}' /proc/meminfo)
    cat >"$S/slurm.conf" <<EOF
ClusterName=jstest
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmctldPort=$ctl
SlurmdPort=$sd
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmdDebug=${JS_TEST_SLURMD_DEBUG:-info}
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd
AccountingStoragePass=socket=$S/munge/munge.sock
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
PlugStackConfig=$S/plugstack.conf
Epilog=${JS_TEST_EPILOG:-}
KillWait=5
MinJobAge=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
SrunPortRange=$(( (RANDOM % 20000) + 30000 ))-$(( (RANDOM % 20000) + 30000 + 0 ))
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$SLURM_NODE Default=YES MaxTime=10 State=UP OverSubscribe=NO
EOF
    sed -i '/^SrunPortRange/d' "$S/slurm.conf"
    sed -i '/^Epilog=$/d' "$S/slurm.conf"
    cat >"$S/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
EOF
    echo "${1:-}" >"$S/plugstack.conf"
    export SLURM_CONF=$S/slurm.conf

    # slurmdbd reads slurmdbd.conf beside $SLURM_CONF
    slurmdbd -D >"$S/log/slurmdbd.out" 2>&1 &
    _slurm_pids="$! $_slurm_pids"
    _slurm_wait_for slurmdbd timeout 5 sacctmgr -n list cluster || { tail -5 "$S/log/slurmdbd.log"; return 1; }
    sacctmgr -i add cluster jstest >/dev/null 2>&1
    sacctmgr -i add account jsacct Cluster=jstest >/dev/null 2>&1
    sacctmgr -i add user root Account=jsacct Cluster=jstest >/dev/null 2>&1
    slurmctld -D -i -f "$S/slurm.conf" >"$S/log/slurmctld.out" 2>&1 &
    _slurm_pids="$! $_slurm_pids"
    _slurm_wait_for slurmctld timeout 5 scontrol ping || { tail -5 "$S/log/slurmctld.log"; return 1; }
    slurmd -D -f "$S/slurm.conf" >"$S/log/slurmd.out" 2>&1 &
    _slurm_pids="$! $_slurm_pids"
    local i
    for i in $(seq 150); do
        sinfo -h -o %T 2>/dev/null | grep -q '^idle' && return 0
        if ! kill -0 "${_slurm_pids%% *}" 2>/dev/null; then
            # the kernel refused what slurmd needs: say exactly what
            echo "    skip: slurmd could not start on this kernel:" >&2
            grep -iE 'error|fatal' "$S/log/slurmd.log" | tail -5 | sed 's/^/      /' >&2
            return 77
        fi
        sleep 0.2
    done
    echo "    slurmd did not register:" >&2
    tail -10 "$S/log/slurmd.log" >&2
    return 1
}

# slurm_wait_jobs JOBID...: until none is pending or running (120 s)
slurm_wait_jobs() {
    local i left
    for i in $(seq 600); do
        left=$(squeue -h -j "$(echo "$*" | tr ' ' ,)" -o %i 2>/dev/null | wc -l)
        [ "$left" = 0 ] && return 0
        sleep 0.2
    done
    echo "    jobs still queued after 120 s:" >&2
    squeue >&2
    return 1
}

# submit NAME SBATCH_ARGS...: sbatch with its output in $T/out; the job id
# is then `jobid NAME` (from $T/jobs/NAME)
submit() {
    local name=$1
    shift
    mkdir -p "$T/jobs" "$T/out"
    sbatch --parsable -D "$T/out" -o "$T/out/$name.out" "$@" >"$T/jobs/$name" 2>"$T/out/$name.err" ||
        fail "sbatch $name: $(cat "$T/out/$name.err")"
}
jobid() { cut -d';' -f1 "$T/jobs/$1"; }
