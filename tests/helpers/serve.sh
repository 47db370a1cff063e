# serve.sh — sourced by the tests of `jobscope serve` (tests/integration/8x_serve_*.sh and
# the edge/views tests): start a server on a free loopback port with its own store and
# Unix socket inside $T, wait until it answers, stop it (registered in the EXIT trap).
source "$ROOT/tests/helpers/publish_servers.sh"

# serve_start [NAME] [ARGS...]: sets SERVE_PORT, SERVE_PID, SERVE_URL, SERVE_STORE,
# SERVE_SOCK (for NAME, default "s"); the log is $T/NAME.log.  Extra ARGS go to serve;
# $SERVE_WRAP, when set, is a command line put before it (prlimit --as=2G).
# The port is picked free, but another connection may take it before serve
# binds it (the ephemeral range): a server that stops at once for an
# address in use is started again on another port, three times at most.
serve_start() {
    local name=${1:-s}; [ $# -gt 0 ] && shift
    SERVE_STORE=$T/$name.store
    SERVE_SOCK=$T/$name.rt/serve.sock
    local try i from
    for try in 1 2 3; do
        SERVE_PORT=$(free_port)
        SERVE_URL=http://127.0.0.1:$SERVE_PORT
        from=$(($(stat -c %s "$T/$name.log" 2>/dev/null || echo 0) + 1))
        ${SERVE_WRAP:-} "$JS" serve --store "$SERVE_STORE" --listen "127.0.0.1:$SERVE_PORT" --socket "$SERVE_SOCK" \
            --node-interval 0 "$@" >>"$T/$name.log" 2>&1 &
        SERVE_PID=$!
        _js_add_trap "kill -9 $SERVE_PID 2>/dev/null"
        for i in $(seq 100); do
            case $(curl -s -o /dev/null -w '%{http_code}' "$SERVE_URL/api/version") in 200 | 401) return 0 ;; esac
            kill -0 "$SERVE_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$SERVE_PID" 2>/dev/null && break
        tail -c +"$from" "$T/$name.log" | grep -q -- "--listen 127.0.0.1:$SERVE_PORT: Address already in use" || break
        echo "    serve: port $SERVE_PORT was taken before serve bound it; again on another" >&2
    done
    cat "$T/$name.log" >&2
    fail "server at $SERVE_URL did not answer"
}

# serve_wait URL: until URL/api/version answers (10 s; 401 without a token counts).
serve_wait() {
    local i
    for i in $(seq 100); do
        case $(curl -s -o /dev/null -w '%{http_code}' "$1/api/version") in 200 | 401) return 0 ;; esac
        sleep 0.1
    done
    fail "server at $1 did not answer"
}

# serve_stop [PID]: SIGTERM and wait (a clean shutdown must take < 10 s).
serve_stop() {
    local pid=${1:-$SERVE_PID} i
    kill "$pid" 2>/dev/null
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; fail "server $pid ignored SIGTERM"; return 1; }
    wait "$pid" 2>/dev/null
    return 0
}

# http METHOD PATH [BODY]: prints "STATUS BODY" of a request to the server.
http() {
    local m=$1 p=$2; shift 2
    if [ $# -gt 0 ]; then
        curl -s -X "$m" -w '\n%{http_code}' --data-binary "$1" "$SERVE_URL$p" | _http_fmt
    else
        curl -s -X "$m" -w '\n%{http_code}' "$SERVE_URL$p" | _http_fmt
    fi
}
_http_fmt() { python3 -c 'import sys; d=sys.stdin.read(); b,_,c=d.rpartition("\n"); print(c, b)'; }
