#!/bin/sh
# Remakes the test-only CA and leaf certificates (100 years). See README.md.
set -e
# Into the directory given, or next to this script.
cd "${1:-$(dirname "$0")}"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
  -keyout ca-key.pem -out ca.pem -subj "/CN=bareweb test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
leaf() { # curve cert key
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:$1 -nodes -keyout $3 -out leaf.csr \
    -subj /CN=localhost 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' > leaf.ext
  openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 \
    -extfile leaf.ext -out $2 2>/dev/null
  rm -f leaf.csr leaf.ext ca.srl
}
leaf prime256v1 cert.pem key.pem
leaf secp384r1 cert384.pem key384.pem
openssl ec -in key.pem -out key-sec1.pem 2>/dev/null
