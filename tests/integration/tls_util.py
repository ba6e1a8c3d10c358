"""Test certificates made with the openssl CLI, as Redis' utils/gen-test-certs.sh does: CAs, and
server and client certificates signed by them (prime256v1 keys, valid two days, for 127.0.0.1
and localhost). Used by the TLS tests and by the ACL tests that run over TLS."""

import subprocess


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
    openssl("req", "-x509", "-new", "-nodes", "-sha256", "-key", f"{name}.key", "-days", "2",
            "-subj", f"/O=shardis test/CN={name}", "-out", f"{name}.crt", cwd=d)


def make_cert(d, name, ca, usage, cn):
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
    (d / f"{name}.ext").write_text(f"keyUsage = digitalSignature\nextendedKeyUsage = {usage}\n"
                                   "subjectAltName = IP:127.0.0.1,DNS:localhost\n")
    openssl("req", "-new", "-sha256", "-key", f"{name}.key", "-subj", f"/O=shardis test/CN={cn}",
            "-out", f"{name}.csr", cwd=d)
    openssl("x509", "-req", "-sha256", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
            f"{ca}.key", "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext",
            "-out", f"{name}.crt", cwd=d)
