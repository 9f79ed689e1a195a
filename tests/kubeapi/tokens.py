"""tokens.py - service-account tokens for kubeapi.py, as kube-apiserver serves them:
TokenRequest (POST /api/v1/namespaces/NS/serviceaccounts/SA/token, the `token` subresource,
what kubelet asks for a projected token and `kubectl create token` calls) and TokenReview
(POST /apis/authentication.k8s.io/v1/tokenreviews, what istiod's KubeJWTAuthenticator calls).

Tokens are JWTs signed with HS256 under a secret made at start or $KUBEAPI_TOKEN_KEY (hex)
(kube-apiserver signs RS256 with its service-account key; the signature is only ever checked
here). Claims as
kube-apiserver issues them: iss, sub system:serviceaccount:NS:SA, aud (spec.audiences, default
the server's audience), iat, nbf, exp (spec.expirationSeconds, default 3600, at least 600) and
kubernetes.io {namespace, serviceaccount {name, uid}}.

A review checks the signature, the expiry, that the token's audiences meet spec.audiences
(default the server's audience) and that the ServiceAccount still exists with the same uid;
a failure is status.authenticated false with kube-apiserver's status.error text. Success:
status.user {username, uid, groups [system:serviceaccounts, system:serviceaccounts:NS,
system:authenticated]} and status.audiences (the intersection).

Test-only: POST /_test/token-clock?offset=S moves the clock the tokens are checked (and issued)
with by S seconds (an expired token without waiting).
"""
import base64
import hashlib
import hmac
import json
import os
import time

from store import ApiError

GROUP = "authentication.k8s.io"
ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = [ISSUER]
# $KUBEAPI_TOKEN_KEY (hex) keeps the key across restarts (as kube-apiserver's key file does)
SECRET = bytes.fromhex(os.environ["KUBEAPI_TOKEN_KEY"]) if os.environ.get("KUBEAPI_TOKEN_KEY") \
    else os.urandom(32)
_clock = {"offset": 0.0}


def _now():
    return int(time.time() + _clock["offset"])


def _b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _unb64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def _sign(claims):
    head = _b64(json.dumps({"alg": "HS256", "kid": "kubeapi-test", "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    mac = hmac.new(SECRET, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (head, body, _b64(mac))


def _rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _sa_res():
    import resources
    return resources.find("", "v1", "serviceaccounts")


def groups():
    """Extra API groups for /apis: {group: [versions]}."""
    return {GROUP: ["v1"]}


def resource_list(group, version):
    """Extra entries of an APIResourceList."""
    if group == "" and version == "v1":
        return [{"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                 "group": GROUP, "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}]
    if group == GROUP and version == "v1":
        return [{"name": "tokenreviews", "singularName": "tokenreview", "namespaced": False,
                 "kind": "TokenReview", "verbs": ["create"]}]
    return []


def discovery(h, parts):
    """GET /apis/authentication.k8s.io[/v1]; True when answered."""
    if parts == ["apis", GROUP]:
        gv = {"groupVersion": GROUP + "/v1", "version": "v1"}
        h.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                          "versions": [gv], "preferredVersion": gv})
        return True
    if parts == ["apis", GROUP, "v1"]:
        h.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                          "groupVersion": GROUP + "/v1",
                          "resources": resource_list(GROUP, "v1")})
        return True
    return False


def test_control(h, parts, q):
    if h.command == "POST" and parts == ["token-clock"]:
        _clock["offset"] = float(q.get("offset", "0"))
        h.read_body_quietly()
        h.send_json(200, {"offset": _clock["offset"]})
        return True
    return False


def handle(h, parts):
    """POST .../serviceaccounts/SA/token and .../tokenreviews; True when answered."""
    if h.command == "POST" and len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] \
            and parts[4] == "serviceaccounts" and parts[6] == "token":
        h.send_json(201, token_request(h.server.store, parts[3], parts[5], h.body_json()))
        return True
    if parts[:3] == ["apis", GROUP, "v1"] and parts[3:] == ["tokenreviews"]:
        if h.command != "POST":
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        h.send_json(201, token_review(h.server.store, h.body_json()))
        return True
    return False


def token_request(store, ns, sa, body):
    obj = store.get(_sa_res(), ns, sa)  # 404 serviceaccounts "sa" not found
    spec = body.get("spec") or {}
    auds = spec.get("audiences") or list(API_AUDIENCES)
    secs = int(spec.get("expirationSeconds") or 3600)
    if secs < 600:
        raise ApiError(422, "Invalid", 'TokenRequest.authentication.k8s.io "%s" is invalid: '
                       "spec.expirationSeconds: Invalid value: %d: may not specify a duration "
                       "less than 10 minutes" % (sa, secs))
    now = _now()
    claims = {"aud": auds, "exp": now + secs, "iat": now, "iss": ISSUER, "nbf": now,
              "sub": "system:serviceaccount:%s:%s" % (ns, sa),
              "kubernetes.io": {"namespace": ns, "serviceaccount": {
                  "name": sa, "uid": obj["metadata"].get("uid", "")}}}
    return {"kind": "TokenRequest", "apiVersion": GROUP + "/v1",
            "metadata": {"name": sa, "namespace": ns, "creationTimestamp": None},
            "spec": {"audiences": auds, "expirationSeconds": secs, "boundObjectRef": None},
            "status": {"token": _sign(claims), "expirationTimestamp": _rfc3339(now + secs)}}


def _verify(store, token, want):
    """(claims, audiences) or raises ValueError with the authenticator's error."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("invalid bearer token")
    try:
        head = json.loads(_unb64(parts[0]))
        claims = json.loads(_unb64(parts[1]))
        sig = _unb64(parts[2])
    except ValueError:
        raise ValueError("invalid bearer token")
    mac = hmac.new(SECRET, ("%s.%s" % (parts[0], parts[1])).encode(), hashlib.sha256).digest()
    if head.get("alg") != "HS256" or not hmac.compare_digest(mac, sig):
        raise ValueError("invalid bearer token, square/go-jose: error in cryptographic primitive")
    if claims.get("iss") != ISSUER:
        raise ValueError("invalid bearer token")
    if _now() > int(claims.get("exp", 0)):
        raise ValueError("invalid bearer token, service account token has expired")
    auds = claims.get("aud") or []
    auds = [auds] if isinstance(auds, str) else auds
    both = [a for a in want if a in auds]
    if not both:
        raise ValueError("invalid bearer token, token audiences %s is invalid for the target "
                         "audiences %s" % (_goq(auds), _goq(want)))
    k = claims.get("kubernetes.io") or {}
    ns, sa = k.get("namespace", ""), (k.get("serviceaccount") or {})
    try:
        obj = store.get(_sa_res(), ns, sa.get("name", ""))
    except ApiError:
        raise ValueError("invalid bearer token, service account %s/%s has been deleted" %
                         (ns, sa.get("name", "")))
    uid = obj["metadata"].get("uid", "")
    if uid != sa.get("uid"):
        raise ValueError("invalid bearer token, service account UID (%s) does not match claim "
                         "(%s)" % (uid, sa.get("uid")))
    return claims, both, uid


def _goq(xs):
    return "[" + " ".join(json.dumps(x) for x in xs) + "]"


def token_review(store, body):
    spec = body.get("spec") or {}
    want = spec.get("audiences") or list(API_AUDIENCES)
    out = {"kind": "TokenReview", "apiVersion": GROUP + "/v1",
           "metadata": {"creationTimestamp": None}, "spec": spec}
    try:
        claims, auds, uid = _verify(store, spec.get("token") or "", want)
    except ValueError as e:
        out["status"] = {"user": {}, "error": "[%s]" % e}
        return out
    ns = claims["kubernetes.io"]["namespace"]
    out["status"] = {"authenticated": True, "audiences": auds, "user": {
        "username": claims["sub"], "uid": uid,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:" + ns,
                   "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI="]}}}
    return out
