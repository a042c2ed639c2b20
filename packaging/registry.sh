# Sourced by packaging/run-tests: a real OCI registry (Debian's
# docker-registry, the CNCF distribution server) on 127.0.0.1 over TLS, with
# a throwaway CA (wassette pulls over HTTPS only and trusts SSL_CERT_FILE).
#   start_registry DIR   sets REGISTRY (127.0.0.1:PORT), REGISTRY_CA (the CA's
#                        PEM) and REGISTRY_PID; the registry stores in DIR
start_registry() {
  local dir=$1 port
  mkdir -p "$dir/storage"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=e2b-tools test CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 1 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
http:
  addr: 127.0.0.1:$port
  tls:
    certificate: $dir/server.pem
    key: $dir/server.key
YAML
  docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
  REGISTRY_PID=$!
  REGISTRY=127.0.0.1:$port
  REGISTRY_CA=$dir/ca.pem
  local _
  for _ in $(seq 100); do
    curl -sf --cacert "$REGISTRY_CA" "https://$REGISTRY/v2/" >/dev/null && return 0
    kill -0 "$REGISTRY_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "packaging: the registry did not start:" >&2
  cat "$dir/registry.log" >&2
  return 1
}
