"""Certificates for the tests' TLS listeners, made with ``openssl`` into a run's temporary directory.

:func:`make_certificate_authority` makes a self-signed CA (its key and PEM certificate, what a
client names in ``ssl.cafile`` / ``ssl.ca.location``); :meth:`CertificateAuthority.issue` signs a
certificate for the hosts the broker is reached at (``subjectAltName`` IP 127.0.0.1 and DNS
localhost, so both clients' hostname verification passes) and packs it with its key into the
PKCS12 key store the broker reads (``ssl.keystore.location``), guarded by a random password.
A second CA made the same way is what an "untrusted certificate" test trusts instead. The same
call makes a client's certificate (its key encrypted, so the key password is a secret to guard).

Nothing here is a secret worth keeping: every key and password is made afresh per run and
removed with the run's directory. The passwords are random so a test can search logs and
results for them.
"""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: long enough for any test run; short so a leaked file is worthless
VALIDITY_DAYS = 2
KEY_BITS = 2048


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()[-2000:]}")


@dataclass(frozen=True)
class KeyStore:
    """A certificate and its private key: as PEM files (the key encrypted with ``password``) and
    as a PKCS12 key store (key, certificate, the CA's certificate) guarded by the same password."""

    path: Path
    password: str
    certificate_pem: Path
    key_pem: Path


@dataclass(frozen=True)
class CertificateAuthority:
    name: str
    directory: Path
    certificate_pem: Path
    key_pem: Path

    def issue(self, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> KeyStore:
        """A certificate for ``hosts`` (its subjectAltName; a client's certificate names its
        user in the last one) signed by this CA, its key encrypted with a random password."""
        directory = self.directory
        key, csr, cert = (directory / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        extensions = directory / f"{name}.ext"
        alt_names = ",".join(f"IP:{h}" if h.replace(".", "").isdigit() else f"DNS:{h}" for h in hosts)
        extensions.write_text(
            f"subjectAltName={alt_names}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n"
        )
        password = secrets.token_urlsafe(18)
        _openssl(
            *("req", "-newkey", f"rsa:{KEY_BITS}", "-keyout", key.name, "-passout", f"pass:{password}"),
            *("-out", csr.name, "-subj", f"/CN={hosts[-1]}/O={name}"),
            cwd=directory,
        )
        _openssl(
            *("x509", "-req", "-in", csr.name, "-CA", self.certificate_pem.name, "-CAkey", self.key_pem.name),
            *("-CAcreateserial", "-out", cert.name, "-days", str(VALIDITY_DAYS), "-sha256"),
            *("-extfile", extensions.name),
            cwd=directory,
        )
        store = directory / f"{name}.p12"
        _openssl(
            *("pkcs12", "-export", "-in", cert.name, "-inkey", key.name, "-passin", f"pass:{password}"),
            *("-certfile", self.certificate_pem.name, "-name", name, "-out", store.name),
            *("-passout", f"pass:{password}"),
            cwd=directory,
        )
        return KeyStore(path=store, password=password, certificate_pem=cert, key_pem=key)


def make_certificate_authority(directory: Path, name: str) -> CertificateAuthority:
    """A self-signed CA in ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / f"{name}-ca.key", directory / f"{name}-ca.pem"
    _openssl(
        *("req", "-x509", "-newkey", f"rsa:{KEY_BITS}", "-nodes", "-keyout", key.name, "-out", cert.name),
        *("-days", str(VALIDITY_DAYS), "-sha256", "-subj", f"/CN={name} test CA"),
        *("-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        cwd=directory,
    )
    return CertificateAuthority(name=name, directory=directory, certificate_pem=cert, key_pem=key)
