#!/usr/bin/env bash
# Make a private CA and scheduler / worker / client certificates signed by it, for Dask TLS.
#
#   deploy/tls/make-certs.sh [OUTDIR]        (default OUTDIR: deploy/tls/certs)
#
# Environment:
#   SROA_TLS_DAYS   validity in days (default 365)
#   SROA_TLS_SANS   extra subjectAltNames for the scheduler and worker certificates,
#                   comma-separated, e.g. "DNS:dask.example.org,IP:10.0.0.5"
#   SROA_TLS_FORCE  set to 1 to replace an existing CA (every old certificate stops working)
#
# Writes (PEM): ca.pem (CA certificate, give it to everyone), ca-key.pem (CA key: keep it off
# the cluster), scheduler.pem/scheduler-key.pem, worker.pem/worker-key.pem,
# client.pem/client-key.pem. Keys are EC P-256 and mode 0600. distributed verifies the chain
# against ca.pem on both ends of every connection (mutual TLS) and does not check host names, so
# the subjectAltNames are only there for other tools (openssl s_client, browsers).
# Re-running with an existing CA keeps it and re-issues the leaf certificates.
set -euo pipefail

out="${1:-$(cd "$(dirname "$0")" && pwd)/certs}"
days="${SROA_TLS_DAYS:-365}"
extra_sans="${SROA_TLS_SANS:-}"
command -v openssl >/dev/null || { echo "make-certs.sh: openssl not found on PATH" >&2; exit 1; }
mkdir -p "$out"
umask 077
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [[ -f "$out/ca.pem" && -f "$out/ca-key.pem" && "${SROA_TLS_FORCE:-0}" != 1 ]]; then
    echo "make-certs.sh: keeping the existing CA in $out (SROA_TLS_FORCE=1 replaces it)"
else
    openssl ecparam -name prime256v1 -genkey -noout -out "$out/ca-key.pem"
    openssl req -x509 -new -sha256 -key "$out/ca-key.pem" -days "$days" \
        -subj "/O=sroa-dist/CN=sroa-dist Dask CA" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$out/ca.pem"
fi

# issue NAME EXTENDED_KEY_USAGE SUBJECT_ALT_NAMES
issue() {
    local name="$1" eku="$2" sans="$3"
    openssl ecparam -name prime256v1 -genkey -noout -out "$out/$name-key.pem"
    openssl req -new -sha256 -key "$out/$name-key.pem" \
        -subj "/O=sroa-dist/CN=sroa-dist $name" -out "$tmp/$name.csr"
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$eku"
        [[ -n "$sans" ]] && echo "subjectAltName=$sans"
    } >"$tmp/$name.ext"
    openssl x509 -req -sha256 -in "$tmp/$name.csr" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" \
        -CAcreateserial -CAserial "$tmp/ca.srl" -days "$days" -extfile "$tmp/$name.ext" \
        -out "$out/$name.pem" 2>/dev/null
    openssl verify -CAfile "$out/ca.pem" "$out/$name.pem" >/dev/null
}

# Schedulers and workers both listen and dial (the scheduler connects to workers), so they get
# both purposes; a client only dials.
base_sans="DNS:scheduler,DNS:localhost,IP:127.0.0.1"
issue scheduler "serverAuth,clientAuth" "$base_sans${extra_sans:+,$extra_sans}"
issue worker "serverAuth,clientAuth" "DNS:worker,DNS:localhost,IP:127.0.0.1${extra_sans:+,$extra_sans}"
issue client "clientAuth" ""
chmod 0644 "$out"/ca.pem "$out"/scheduler.pem "$out"/worker.pem "$out"/client.pem
chmod 0600 "$out"/*-key.pem
echo "make-certs.sh: wrote CA, scheduler, worker and client certificates to $out"
