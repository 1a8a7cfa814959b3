#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
#
# scripts/lock_libs_selftest.sh - what Debian ships of the libraries that
# lock their own key memory (issue 29), run plain and in heap mode: each
# check prints a transcript that does not depend on random keys (exit
# codes, verification results, round-trip comparisons, deterministic
# outputs), and the two transcripts must be the same.  Run from the top of
# the tree after `make` (BUILD=dir for another build directory); needs gpg,
# libgcrypt20, botan, minisign, python3-nacl, node (optional: skipped when
# missing).  Exit 0 when every check printed the same plain and in heap
# mode and no check failed plain; the transcripts are kept in $OUT
# (default: a temporary directory, printed).
#
#   libgcrypt: its own self-tests (GCRYCTL_SELFTEST after GCRYCTL_INIT_SECMEM,
#              through ctypes), mpicalc, hmac256, and gpg (with its agent,
#              both in the mode): key generation, public-key and symmetric
#              encryption round trips, signatures (Ed25519, RSA) verified
#   libsodium: minisign (its secret key in sodium_malloc memory): key
#              generation, signature, verification, a forged file refused;
#              PyNaCl (SecretBox, Box, SigningKey, pwhash, sealed boxes)
#   Botan 2:   the botan command: keygen (RSA, ECDSA, Ed25519), PKCS #8
#              with a passphrase, sign/verify, pk_encrypt/pk_decrypt,
#              AES-256/GCM file encryption, Argon2 and bcrypt hashes, TSS
#   OpenSSL:   node --secure-heap (OpenSSL's secure heap, set up by node
#              with CRYPTO_secure_malloc_init): key generation, signatures,
#              ECDH, secureHeapUsed(); openssl commands (which do not set
#              up the secure heap): genpkey, pkeyutl, enc, dgst
set -u
B=${BUILD:-build}
MOD=$(realpath "$B/libsecretmem-heap.so") || { echo "$B/libsecretmem-heap.so is not built" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/secretmem-locklibs.XXXXXX)}
PY=/usr/bin/python3
mkdir -p "$OUT"

have() { command -v "$1" >/dev/null 2>&1; }
# "name: rc N" of a command, its output dropped
rc() { name=$1; shift; "$@" >/dev/null 2>&1; echo "$name: rc $?"; }

check_gcrypt_selftest() {
	$PY - <<'EOF'
import ctypes
g = ctypes.CDLL("libgcrypt.so.20")
g.gcry_check_version.restype = ctypes.c_char_p
print("version:", g.gcry_check_version(None).decode())
print("GCRYCTL_INIT_SECMEM:", g.gcry_control(24, ctypes.c_uint(65536), 0))
print("GCRYCTL_INITIALIZATION_FINISHED:", g.gcry_control(38, 0))
print("GCRYCTL_SELFTEST:", g.gcry_control(57, 0))
EOF
	echo "2 3 + 100 * 7 - p" | mpicalc
	printf 'abc' > "$W/abc"
	hmac256 "key of the test" "$W/abc" | cut -d' ' -f1
}

check_gpg() {
	H=$W/gnupg
	mkdir -m 700 "$H"
	G="gpg --homedir $H --batch --pinentry-mode loopback --passphrase ''"
	rc "quick-gen-key rsa (default)" sh -c "$G --quick-gen-key 'rsa <rsa@test>' default default never"
	rc "quick-gen-key ed25519" sh -c "$G --quick-gen-key 'ed <ed@test>' ed25519 sign never"
	head -c 100000 /dev/urandom > "$W/msg"
	rc "encrypt" sh -c "$G --trust-model always -r rsa@test -e -o '$W/msg.gpg' '$W/msg'"
	rc "decrypt" sh -c "$G -d -o '$W/msg.out' '$W/msg.gpg'"
	rc "round trip" cmp "$W/msg" "$W/msg.out"
	rc "symmetric encrypt" sh -c "gpg --homedir $H --batch --pinentry-mode loopback --passphrase pw \
		--cipher-algo AES256 -c -o '$W/msg.sym' '$W/msg'"
	rc "symmetric decrypt" sh -c "gpg --homedir $H --batch --pinentry-mode loopback --passphrase pw \
		-d -o '$W/msg.symout' '$W/msg.sym'"
	rc "symmetric round trip" cmp "$W/msg" "$W/msg.symout"
	rc "symmetric, wrong passphrase refused" sh -c "! gpg --homedir $H --batch --pinentry-mode loopback \
		--passphrase wrong -d -o '$W/x' '$W/msg.sym'"
	for u in rsa ed; do
		rc "sign ($u)" sh -c "$G -u $u@test -s -o '$W/msg.$u.sig' '$W/msg'"
		rc "verify ($u)" sh -c "gpg --homedir $H --batch --verify '$W/msg.$u.sig'"
	done
	printf 'x' >> "$W/msg"
	rc "detached signature" sh -c "$G -u ed@test -b -o '$W/msg.det' '$W/msg'"
	printf 'y' >> "$W/msg"
	rc "changed file refused" sh -c "! gpg --homedir $H --batch --verify '$W/msg.det' '$W/msg'"
	gpgconf --homedir "$H" --kill gpg-agent
}

check_minisign() {
	have minisign || { echo "minisign: not installed"; return; }
	rc "minisign -G" minisign -G -W -p "$W/ms.pub" -s "$W/ms.key"
	head -c 50000 /dev/urandom > "$W/msf"
	rc "minisign -S" minisign -S -s "$W/ms.key" -m "$W/msf"
	rc "minisign -V" minisign -V -p "$W/ms.pub" -m "$W/msf"
	printf 'z' >> "$W/msf"
	rc "minisign -V, changed file refused" sh -c "! minisign -V -p '$W/ms.pub' -m '$W/msf'"
}

check_nacl() {
	$PY - <<'EOF' 2>&1
import nacl.secret, nacl.public, nacl.signing, nacl.utils, nacl.pwhash, nacl.exceptions, nacl.hash
k = nacl.utils.random(32)
box = nacl.secret.SecretBox(k)
m = nacl.utils.random(10000)
print("SecretBox round trip:", box.decrypt(box.encrypt(m)) == m)
a, b = nacl.public.PrivateKey.generate(), nacl.public.PrivateKey.generate()
c = nacl.public.Box(a, b.public_key).encrypt(m)
print("Box round trip:", nacl.public.Box(b, a.public_key).decrypt(c) == m)
s = nacl.public.SealedBox(b.public_key).encrypt(m)
print("SealedBox round trip:", nacl.public.SealedBox(b).decrypt(s) == m)
sk = nacl.signing.SigningKey.generate()
sig = sk.sign(m)
print("signature verified:", sk.verify_key.verify(sig) == m)
try:
    sk.verify_key.verify(sig[:-1] + bytes([sig[-1] ^ 1]))
    print("forged signature refused: False")
except nacl.exceptions.BadSignatureError:
    print("forged signature refused: True")
h = nacl.pwhash.argon2id.str(b"pw", opslimit=2, memlimit=8 << 20)
print("argon2id verified:", nacl.pwhash.verify(h, b"pw"))
print("blake2b:", nacl.hash.blake2b(b"abc").decode())
EOF
}

check_botan() {
	have botan || { echo "botan: not installed"; return; }
	for a in "RSA --params=2048" "ECDSA --params=secp256r1" "Ed25519"; do
		n=$(echo "$a" | cut -d' ' -f1)
		# shellcheck disable=SC2086
		rc "keygen $n" sh -c "botan keygen --algo=$a > '$W/$n.key'"
		rc "pkcs8 --pub-out $n" sh -c "botan pkcs8 --pub-out '$W/$n.key' > '$W/$n.pub'"
		head -c 20000 /dev/urandom > "$W/$n.data"
		rc "sign $n" sh -c "botan sign '$W/$n.key' '$W/$n.data' > '$W/$n.sig'"
		rc "verify $n" sh -c "botan verify '$W/$n.pub' '$W/$n.data' '$W/$n.sig' | grep -q 'is valid'"
		printf 'q' >> "$W/$n.data"
		rc "verify $n, changed file refused" sh -c "botan verify '$W/$n.pub' '$W/$n.data' '$W/$n.sig' | \
			grep -q 'is invalid'"
	done
	rc "keygen RSA with passphrase" sh -c "botan keygen --algo=RSA --params=2048 --passphrase=pw > '$W/enc.key'"
	rc "pkcs8 open with passphrase" sh -c "botan pkcs8 --pass-in=pw '$W/enc.key' | grep -q 'BEGIN PRIVATE KEY'"
	rc "pkcs8 wrong passphrase refused" sh -c "! botan pkcs8 --pass-in=wrong '$W/enc.key' >/dev/null 2>&1"
	head -c 30000 /dev/urandom > "$W/pk.data"
	rc "pk_encrypt" sh -c "botan pk_encrypt '$W/RSA.pub' '$W/pk.data' > '$W/pk.enc'"
	rc "pk_decrypt" sh -c "botan pk_decrypt '$W/RSA.key' '$W/pk.enc' > '$W/pk.out'"
	rc "pk round trip" cmp "$W/pk.data" "$W/pk.out"
	K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
	N=000102030405060708090a0b
	printf 'plaintext of the test\n' > "$W/gcm.in"
	botan encryption --mode=aes-256-gcm --key=$K --iv=$N --ad=00 < "$W/gcm.in" > "$W/gcm.enc"
	echo "aes-256-gcm ciphertext: $(botan hash --algo=SHA-256 "$W/gcm.enc" | cut -d' ' -f1)"
	botan encryption --decrypt --mode=aes-256-gcm --key=$K --iv=$N --ad=00 < "$W/gcm.enc" > "$W/gcm.out"
	rc "aes-256-gcm round trip" cmp "$W/gcm.in" "$W/gcm.out"
	h=$(botan gen_argon2 --mem=8192 --p=1 --t=1 pw)
	rc "argon2 verified" sh -c "botan check_argon2 pw '$h' | grep -q 'Password is valid'"
	h=$(botan gen_bcrypt --work-factor=8 pw)
	rc "bcrypt verified" sh -c "botan check_bcrypt pw '$h' | grep -q 'Password is valid'"
	printf 'abc' > "$W/h.in"
	printf 'key of the test' > "$W/h.key"
	echo "hmac: $(botan hmac --hash=SHA-256 --no-fsname "$W/h.key" "$W/h.in")"
	printf 'secret of the test\n' > "$W/tss.in"
	rc "tss_split" sh -c "cd '$W' && botan tss_split 2 3 tss.in --share-prefix=share"
	rc "tss_recover" sh -c "cd '$W' && botan tss_recover share1.tss share3.tss > tss.out && cmp tss.in tss.out"
}

check_node() {
	have node || { echo "node: not installed"; return; }
	node --secure-heap=65536 --secure-heap-min=64 - <<'EOF' 2>&1
const c = require("crypto");
console.log("secure heap total:", c.secureHeapUsed().total);
const m = c.randomBytes(10000);
for (const [t, o] of [["rsa", { modulusLength: 2048 }], ["ec", { namedCurve: "P-256" }], ["ed25519", {}]]) {
	const k = c.generateKeyPairSync(t, o);
	const alg = t === "ed25519" ? null : "sha256";
	const s = c.sign(alg, m, k.privateKey);
	console.log(t, "signature verified:", c.verify(alg, m, k.publicKey, s));
	const bad = Buffer.from(s); bad[bad.length - 1] ^= 1;
	console.log(t, "forged signature refused:", !c.verify(alg, m, k.publicKey, bad));
}
const a = c.createECDH("prime256v1"), b = c.createECDH("prime256v1");
a.generateKeys(); b.generateKeys();
console.log("ECDH agree:", a.computeSecret(b.getPublicKey()).equals(b.computeSecret(a.getPublicKey())));
console.log("secure heap in use:", c.secureHeapUsed().used > 0);
const key = c.randomBytes(32), iv = c.randomBytes(12);
const e = c.createCipheriv("aes-256-gcm", key, iv), ct = Buffer.concat([e.update(m), e.final()]);
const d = c.createDecipheriv("aes-256-gcm", key, iv); d.setAuthTag(e.getAuthTag());
console.log("aes-256-gcm round trip:", Buffer.concat([d.update(ct), d.final()]).equals(m));
EOF
}

check_openssl() {
	rc "genpkey rsa" openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$W/o.key"
	rc "pkey -pubout" openssl pkey -in "$W/o.key" -pubout -out "$W/o.pub"
	head -c 100 /dev/urandom > "$W/o.data"
	rc "pkeyutl -encrypt" openssl pkeyutl -encrypt -pubin -inkey "$W/o.pub" -in "$W/o.data" -out "$W/o.enc"
	rc "pkeyutl -decrypt" openssl pkeyutl -decrypt -inkey "$W/o.key" -in "$W/o.enc" -out "$W/o.out"
	rc "pkeyutl round trip" cmp "$W/o.data" "$W/o.out"
	rc "dgst -sign" openssl dgst -sha256 -sign "$W/o.key" -out "$W/o.sig" "$W/o.data"
	rc "dgst -verify" openssl dgst -sha256 -verify "$W/o.pub" -signature "$W/o.sig" "$W/o.data"
	rc "enc -aes-256-cbc -pbkdf2" openssl enc -aes-256-cbc -pbkdf2 -pass pass:pw -in "$W/o.data" -out "$W/o.cbc"
	rc "enc -d" sh -c "openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:pw -in '$W/o.cbc' | cmp - '$W/o.data'"
	echo "hmac: $(printf 'abc' | openssl dgst -sha256 -hmac key | cut -d' ' -f2)"
}

# heap mode must really be on in the heap runs
LD_PRELOAD="$MOD" cat /proc/self/maps | grep -q 'secretmem' || {
	echo "the module does not load (LD_PRELOAD=$MOD)" >&2
	exit 2
}
CHECKS="gcrypt_selftest gpg minisign nacl botan node openssl"
status=0
for c in $CHECKS; do
	for mode in plain heap; do
		W=$OUT/$c-$mode
		rm -rf "$W" && mkdir -p "$W"
		if [ $mode = heap ]; then
			( export LD_PRELOAD="$MOD" G_SLICE=always-malloc; unset PYTHONMALLOC; "check_$c" ) > "$OUT/$c-$mode.txt" 2>&1
		else
			( unset LD_PRELOAD; "check_$c" ) > "$OUT/$c-$mode.txt" 2>&1
		fi
	done
	if grep -q 'rc [1-9]\|False\|false\|Traceback\|Error' "$OUT/$c-plain.txt"; then
		echo "FAIL $c: failed plain (transcript $OUT/$c-plain.txt)"
		status=1
	elif cmp -s "$OUT/$c-plain.txt" "$OUT/$c-heap.txt"; then
		echo "SAME $c: $(grep -c . "$OUT/$c-plain.txt") lines, plain = heap"
	else
		echo "DIFF $c:"
		diff "$OUT/$c-plain.txt" "$OUT/$c-heap.txt" | sed 's/^/    /'
		status=1
	fi
done
echo "transcripts: $OUT"
exit $status
