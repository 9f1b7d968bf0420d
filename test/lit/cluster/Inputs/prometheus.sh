# prometheus.sh: a real Prometheus for one test (sourced after daemon.sh), scraping one target every second, on a free
# port, its data in the test's directory; a background job of the test (daemon.sh's cleanup kills what is left).
PROM_DIR=$SOCKDIR/prometheus
PROM_URL=

# start_prometheus HOST:PORT: returns once Prometheus says it is ready (30 s at most).
start_prometheus() {
  if ! command -v prometheus >/dev/null || ! command -v curl >/dev/null; then
    echo "prometheus or curl is not installed: tools/setup.sh installs both (apt-get install prometheus curl)" >&2
    exit 1
  fi
  mkdir -p "$PROM_DIR/data"
  local port
  port=$(free_port)
  # honor_labels: the series' own labels stay as preemptd wrote them.
  cat > "$PROM_DIR/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: preemptd
    honor_labels: true
    static_configs:
      - targets: ['$1']
YML
  prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
    --web.listen-address="127.0.0.1:$port" >"$PROM_DIR/prometheus.log" 2>&1 &
  PROM_PID=$!
  PROM_URL=http://127.0.0.1:$port
  for _ in $(seq 300); do
    curl -sf "$PROM_URL/-/ready" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "Prometheus was not ready within 30 s:" >&2
  tail -n 20 "$PROM_DIR/prometheus.log" >&2
  exit 1
}

# prom_query EXPR: the instant query's result as JSON (the API's data.result), once it is not empty (30 s at most,
# a scrape a second); exits the test with the expression when it stays empty.
prom_query() {
  local answer
  for _ in $(seq 300); do
    answer=$(curl -s --get --data-urlencode "query=$1" "$PROM_URL/api/v1/query" |
             "$PYTHON" -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(json.dumps(r) if r else "")')
    [ -n "$answer" ] && { echo "$answer"; return 0; }
    sleep 0.1
  done
  echo "Prometheus has no result for $1 within 30 s" >&2
  exit 1
}

stop_prometheus() {
  kill -TERM "$PROM_PID" 2>/dev/null
  wait "$PROM_PID" 2>/dev/null
}
