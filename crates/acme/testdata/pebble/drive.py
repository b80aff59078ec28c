# Drives pebble through one order with python's cryptography, saving every body.
import base64, json, ssl, urllib.request, sys, time
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives import hashes, serialization
from cryptography import x509
from cryptography.x509.oid import NameOID
OUT = sys.argv[1]
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
acct = ec.generate_private_key(ec.SECP256R1())
nums = acct.public_key().public_numbers()
jwk = {"crv": "P-256", "kty": "EC", "x": b64(nums.x.to_bytes(32, "big")), "y": b64(nums.y.to_bytes(32, "big"))}
def req(url, data=None, method=None, headers={}):
    r = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        resp = urllib.request.urlopen(r, context=ctx)
    except urllib.error.HTTPError as e:
        resp = e
    return resp.status, dict(resp.headers), resp.read()
def save(name, body): open(f"{OUT}/{name}", "wb").write(body)
st, h, d = req("https://127.0.0.1:14000/dir"); save("directory.json", d); D = json.loads(d)
nonce = req(D["newNonce"], method="HEAD")[1]["Replay-Nonce"]
kid = None
def post(url, payload, bad_nonce=False):
    global nonce
    prot = {"alg": "ES256", "nonce": "bogus" if bad_nonce else nonce, "url": url}
    if kid: prot["kid"] = kid
    else: prot["jwk"] = jwk
    p = b64(json.dumps(prot).encode()); pl = "" if payload is None else b64(json.dumps(payload).encode())
    der = acct.sign(f"{p}.{pl}".encode(), ec.ECDSA(hashes.SHA256()))
    r, s = utils.decode_dss_signature(der)
    body = json.dumps({"protected": p, "payload": pl, "signature": b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))}).encode()
    st, h, d = req(url, body, headers={"Content-Type": "application/jose+json"})
    if "Replay-Nonce" in h: nonce = h["Replay-Nonce"]
    return st, h, d
st, h, d = post(D["newAccount"], {"termsOfServiceAgreed": True}, bad_nonce=True); print("badnonce", st); save("problem-badnonce.json", d)
st, h, d = post(D["newAccount"], {"termsOfServiceAgreed": True, "contact": ["mailto:ops@acme.test"]}); print("account", st); save("account.json", d); kid = h["Location"]
st, h, d = post(D["newOrder"], {"identifiers": [{"type": "dns", "value": "acme.test"}, {"type": "dns", "value": "www.acme.test"}]}); print("order", st); save("order-pending.json", d)
order_url = h["Location"]; O = json.loads(d)
for i, a in enumerate(O["authorizations"]):
    st, h, d = post(a, None); save(f"authz-{i}.json", d); A = json.loads(d)
    c = [c for c in A["challenges"] if c["type"] == "http-01"][0]
    st, h, d = post(c["url"], {}); print("challenge", st); save(f"challenge-{i}.json", d)
for _ in range(20):
    st, h, d = post(order_url, None)
    if json.loads(d)["status"] == "ready": break
    time.sleep(0.2)
save("order-ready.json", d)
S = bytes(range(1, 33))
ck = ec.derive_private_key(int.from_bytes(S, "big"), ec.SECP256R1())
csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).add_extension(
    x509.SubjectAlternativeName([x509.DNSName("acme.test"), x509.DNSName("www.acme.test")]), critical=True).sign(ck, hashes.SHA256())
st, h, d = post(O["finalize"], {"csr": b64(csr.public_bytes(serialization.Encoding.DER))}); print("finalize", st, d[:200])
for _ in range(20):
    st, h, d = post(order_url, None)
    if json.loads(d)["status"] == "valid": break
    time.sleep(0.2)
save("order-valid.json", d)
st, h, d = post(json.loads(d)["certificate"], None); print("cert", st); save("chain.pem", d)
# A second order with a name pebble refuses: its problem document.
st, h, d = post(D["newOrder"], {"identifiers": [{"type": "dns", "value": "bad name"}]}); print("bad order", st); save("problem-rejected.json", d)
