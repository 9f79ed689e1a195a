"""CustomResourceDefinitions make their kind servable: creating a CRD (apiextensions.k8s.io/v1)
for a group/plural the server does not serve yet adds it to resources.RESOURCES with its served
versions (storage version first), scope, kind and shortNames, so discovery lists it and its
objects can be stored, as kube-apiserver's apiextensions server does once the CRD is
Established. Kinds already served (the Istio kinds of resources.py) are left as they are."""

import resources


def register(crd):
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    vers = [v for v in spec.get("versions") or [] if v.get("served")]
    if not group or not plural or not kind or not vers:
        return
    if any(r.group == group and r.resource == plural for r in resources.RESOURCES):
        return
    vers.sort(key=lambda v: not v.get("storage"))
    resources.RESOURCES.append(resources.Res(
        group, tuple(v["name"] for v in vers), plural, kind,
        spec.get("scope", "Namespaced") == "Namespaced", tuple(names.get("shortNames") or ()),
        ()))
