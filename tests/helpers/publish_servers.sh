# publish_servers.sh — sourced by the publish tests (tests/integration/4x_publish_*.sh):
# starts throwaway RabbitMQ and VictoriaMetrics servers on loopback inside $T and
# stops them again (each start_* registers its stop in the EXIT trap).
# Recipes: shared/reference/test-servers.md.

_js_traps=""
_js_on_exit() { eval "$_js_traps"; }
_js_add_trap() { _js_traps="$1; $_js_traps"; trap _js_on_exit EXIT; }

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# make_cert DIR: DIR/cert.pem + DIR/key.pem, self-signed for localhost and 127.0.0.1.
make_cert() {
    need openssl || return 77
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/key.pem" -out "$1/cert.pem" -days 2 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 &&
    chmod 644 "$1/key.pem" "$1/cert.pem"
}

# rmq_start: RabbitMQ with the management plugin.  Sets RMQ_PORT (AMQP),
# RMQ_MGMT (HTTP API), RMQ_NODE; returns 77 (skip) when not installed.
# Its four ports are picked free, but any connection on the machine may take
# one before the broker binds it (they are in the ephemeral range): a broker
# that stops for a port in use is started again on four others, three times
# at most (seen once in CI: "could not bind to distribution port").
rmq_start() {
    need rabbitmq-server || return 77
    need rabbitmqctl || return 77
    RMQ_DIR=$T/rmq
    chmod o+x "$T"          # the broker runs as user rabbitmq
    local try
    for try in 1 2 3; do
        _rmq_start_once && return 0
        [ $? = 2 ] || break
        echo "    rabbitmq: a port was taken before the broker bound it; again on others" >&2
    done
    echo "rabbitmq did not start:"; tail -20 "$RMQ_DIR/server.log"
    return 1
}

# One start: 0 up, 2 stopped for a port in use, 1 otherwise.
_rmq_start_once() {
    rm -rf "$RMQ_DIR"
    mkdir -p "$RMQ_DIR" && chmod 777 "$RMQ_DIR"
    RMQ_PORT=$(free_port); RMQ_MGMT=$(free_port); RMQ_DIST=$(free_port); RMQ_TLS=$(free_port)
    RMQ_NODE="js$RANDOM$$@localhost"
    cat > "$RMQ_DIR/rabbit.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$RMQ_PORT
management.tcp.port = $RMQ_MGMT
management.tcp.ip = 127.0.0.1
loopback_users = none
CONF
    if [ "${RMQ_WITH_TLS:-}" = 1 ]; then    # amqps on $RMQ_TLS with a self-signed cert for localhost
        make_cert "$RMQ_DIR" || return 1
        cat >> "$RMQ_DIR/rabbit.conf" <<CONF
listeners.ssl.default = 127.0.0.1:$RMQ_TLS
ssl_options.cacertfile = $RMQ_DIR/cert.pem
ssl_options.certfile = $RMQ_DIR/cert.pem
ssl_options.keyfile = $RMQ_DIR/key.pem
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
CONF
    fi
    echo '[rabbitmq_management].' > "$RMQ_DIR/enabled_plugins"
    chmod 666 "$RMQ_DIR"/*
    export RABBITMQ_NODENAME=$RMQ_NODE RABBITMQ_CONFIG_FILE=$RMQ_DIR/rabbit \
           RABBITMQ_MNESIA_BASE=$RMQ_DIR/mnesia RABBITMQ_LOG_BASE=$RMQ_DIR/log \
           RABBITMQ_FEATURE_FLAGS_FILE=$RMQ_DIR/feature_flags \
           RABBITMQ_ENABLED_PLUGINS_FILE=$RMQ_DIR/enabled_plugins \
           RABBITMQ_DIST_PORT=$RMQ_DIST HOME=$RMQ_DIR
    rabbitmq-server >"$RMQ_DIR/server.log" 2>&1 &
    RMQ_PID=$!
    _js_add_trap rmq_stop
    local i
    for i in $(seq 1 120); do
        curl -sf -u guest:guest "http://127.0.0.1:$RMQ_MGMT/api/overview" >/dev/null 2>&1 && return 0
        kill -0 "$RMQ_PID" 2>/dev/null || break
        sleep 0.5
    done
    if grep -Eqi 'already_used|eaddrinuse|could not bind' "$RMQ_DIR/server.log"; then
        rmq_stop
        return 2
    fi
    return 1
}
rmq_ctl() { rabbitmqctl -q -n "$RMQ_NODE" "$@"; }
_rmq_tree() { local p; echo -n "$1 "; for p in $(pgrep -P "$1"); do _rmq_tree "$p"; done; }
# rmq_stop: the broker is a throwaway (its data lives under $T), so its
# processes are killed at once: `rabbitmqctl stop` took ~7 s a test (a CLI
# boot, then an orderly shutdown of a broker nobody keeps).
rmq_stop() {
    [ -n "${RMQ_PID:-}" ] || return 0
    # shellcheck disable=SC2046
    kill -KILL $(_rmq_tree "$RMQ_PID") 2>/dev/null
    wait "$RMQ_PID" 2>/dev/null
    RMQ_PID=
    # the broker started epmd; end it when no other Erlang node uses it
    local i
    for i in $(seq 1 20); do
        epmd -names 2>/dev/null | grep -q "^name ${RMQ_NODE%@*} " || break
        sleep 0.1
    done
    epmd -names 2>/dev/null | grep -q '^name ' || epmd -kill >/dev/null 2>&1
}
# rmq_api METHOD PATH [JSON]
rmq_api() {
    curl -sf -u guest:guest -X "$1" -H 'content-type: application/json' \
         "http://127.0.0.1:$RMQ_MGMT/api$2" ${3:+-d "$3"}
}
# rmq_queue EXCHANGE QUEUE [KEY]: a durable topic exchange and a queue bound to it.
rmq_queue() {
    rmq_api PUT "/exchanges/%2f/$1" '{"type":"topic","durable":true}' >/dev/null &&
    rmq_api PUT "/queues/%2f/$2" '{"durable":true}' >/dev/null &&
    rmq_api POST "/bindings/%2f/e/$1/q/$2" "{\"routing_key\":\"${3:-#}\"}" >/dev/null
}

# vm_start: VictoriaMetrics with Influx (/write) and OpenTSDB (/api/put) input.
# Sets VM_PORT, VM_TSDB; `vm_start again` restarts on the same ports and data.
# New ports (picked free, but in the ephemeral range) are picked again when
# one was taken before VictoriaMetrics bound it, three times at most.
vm_start() {
    need victoria-metrics || return 77
    local try i from
    for try in 1 2 3; do
        [ "${1:-}" = again ] || { VM_PORT=$(free_port); VM_TSDB=$(free_port); }
        from=$(($(stat -c %s "$T/vm.log" 2>/dev/null || echo 0) + 1))
        victoria-metrics -storageDataPath="$T/vm" -httpListenAddr=127.0.0.1:$VM_PORT \
            -opentsdbHTTPListenAddr=127.0.0.1:$VM_TSDB -retentionPeriod=100y \
            -search.latencyOffset=0s >>"$T/vm.log" 2>&1 &
        VM_PID=$!
        _js_add_trap vm_stop
        for i in $(seq 1 60); do
            [ "$(curl -sf http://127.0.0.1:$VM_PORT/health 2>/dev/null)" = OK ] && return 0
            kill -0 "$VM_PID" 2>/dev/null || break
            sleep 0.25
        done
        [ "${1:-}" != again ] && ! kill -0 "$VM_PID" 2>/dev/null &&
            tail -c +"$from" "$T/vm.log" | grep -qi 'address already in use' || break
        echo "    victoria-metrics: a port was taken before it bound it; again on others" >&2
    done
    echo "victoria-metrics did not start:"; tail -20 "$T/vm.log"
    return 1
}
vm_stop() { [ -n "${VM_PID:-}" ] && kill "$VM_PID" 2>/dev/null; wait "$VM_PID" 2>/dev/null; VM_PID=; }

# amqp_drain QUEUE OUT: takes every message out of QUEUE (python3-pika, an
# independent client) and writes one JSON line per message:
# {"rk": routing key, "dm": delivery mode, "ct": content type, "ev": the event}
# Debian's python3-pika is for /usr/bin/python3 (another python3 may come first in PATH).
PIKA_PY=$(for p in /usr/bin/python3 python3; do $p -c 'import pika' 2>/dev/null && { echo $p; break; }; done)
have_pika() { [ -n "$PIKA_PY" ] || { echo "    skip: python3-pika not installed" >&2; return 77; }; }
amqp_drain() {
    $PIKA_PY - "$RMQ_PORT" "$1" "$2" <<'PY'
import json, sys, pika
port, queue, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port,
                               credentials=pika.PlainCredentials("guest", "guest")))
ch = conn.channel()
with open(out, "w") as f:
    while True:
        m, props, body = ch.basic_get(queue, auto_ack=True)
        if m is None:
            break
        f.write(json.dumps({"rk": m.routing_key, "dm": props.delivery_mode,
                            "ct": props.content_type, "ev": json.loads(body)}) + "\n")
conn.close()
PY
}

# check_delivery GOT.jsonl SENT.jsonl [exact]: every event of SENT (the
# local JSON Lines copy) is in GOT (amqp_drain's output or plain events) with
# the same content; the first occurrences come in sequence order; with
# "exact", no event came twice.  Prints what is wrong.
check_delivery() {
    python3 - "$@" <<'PY'
import json, sys
got_path, sent_path = sys.argv[1], sys.argv[2]
exact = len(sys.argv) > 3 and sys.argv[3] == "exact"
sent = [json.loads(l) for l in open(sent_path) if l.strip()]
got = []
for l in open(got_path):
    if l.strip():
        g = json.loads(l)
        g = g["ev"] if "ev" in g and isinstance(g["ev"], dict) else g
        if isinstance(g, dict):
            g.pop("@timestamp", None)      # added by the elasticsearch sink
        got.append(g)
bad = []
seqs = [e["seq"] for e in sent]
if seqs != list(range(1, len(sent) + 1)):
    bad.append("local copy is not seq 1..N")
by_seq = {e["seq"]: e for e in sent}
first, seen, dups = [], set(), 0
for e in got:
    s = e.get("seq")
    if s in seen:
        dups += 1
        continue
    seen.add(s)
    first.append(s)
    if by_seq.get(s) != e:
        bad.append("event seq %s differs from the local copy" % s)
missing = sorted(set(by_seq) - seen)
if missing:
    bad.append("missing seqs %s" % missing[:20])
if first != sorted(first):
    bad.append("order broken: %s" % first[:50])
if exact and dups:
    bad.append("%d duplicates" % dups)
print("; ".join(bad[:5]) if bad else "ok %d events, %d duplicates" % (len(sent), dups))
PY
}

# recv_start [ARGS]: tests/helpers/http_receiver.py on loopback; sets RECV_PORT,
# requests are logged to $T/requests.jsonl.
recv_start() {
    python3 "$ROOT/tests/helpers/http_receiver.py" "$T/recv.port" "$T/requests.jsonl" "$@" 2>"$T/recv.log" &
    RECV_PID=$!
    _js_add_trap recv_stop
    local i
    for i in $(seq 1 50); do [ -s "$T/recv.port" ] && break; sleep 0.1; done
    RECV_PORT=$(cat "$T/recv.port" 2>/dev/null) && [ -n "$RECV_PORT" ]
}
recv_stop() { [ -n "${RECV_PID:-}" ] && kill "$RECV_PID" 2>/dev/null; wait "$RECV_PID" 2>/dev/null; RECV_PID=; }

# vm_points METRIC: "ms value" lines of every series of METRIC, sorted.
vm_points() {
    curl -sf "http://127.0.0.1:$VM_PORT/internal/force_flush" >/dev/null
    curl -sf "http://127.0.0.1:$VM_PORT/api/v1/export" --data-urlencode "match[]={__name__=\"$1\"}" |
        python3 -c '
import json, sys
pts = set()
for l in sys.stdin:
    s = json.loads(l)
    pts.update(zip(s["timestamps"], s["values"]))
for t, v in sorted(pts):
    print(t, repr(float(v)))'
}
