#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Certificates for the TLS tests, made with the openssl command (EC P-256,
# fast to make and to use).  Every file lands in DIR as NAME.pem and NAME.key.
#
#   certs.sh ca   DIR NAME                      a CA (its own issuer)
#   certs.sh leaf DIR NAME CA CN [SAN [DAYS]]   a certificate signed by CA (DIR/CA.pem, .key)
#                                               for the common name CN; SAN: a subjectAltName
#                                               ("DNS:localhost,IP:127.0.0.1"; "-": none);
#                                               DAYS: its life (default 30)
#
# An expired certificate: run the leaf command under faketime in the past
# (tests/integration/test_tls.py does).
set -eu
what=$1
dir=$2
name=$3
cd "$dir"
case "$what" in
ca)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
        -keyout "$name.key" -out "$name.pem" -subj "/CN=$name" 2>/dev/null
    ;;
leaf)
    ca=$4
    cn=$5
    san=${6:--}
    days=${7:-30}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" \
        -out "$name.csr" -subj "/CN=$cn" 2>/dev/null
    ext=""
    if [ "$san" != "-" ]; then
        printf 'subjectAltName=%s\n' "$san" >"$name.ext"
        ext="-extfile $name.ext"
    fi
    # shellcheck disable=SC2086
    openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" \
        -days "$days" -out "$name.pem" $ext 2>/dev/null
    rm -f "$name.csr" "$name.ext"
    ;;
*)
    echo "usage: certs.sh ca DIR NAME | leaf DIR NAME CA CN [SAN [DAYS]]" >&2
    exit 2
    ;;
esac
chmod 600 "$name.key"
