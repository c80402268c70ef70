"""deploy/k8s/*.yaml, the Kubernetes manifests. No cluster runs here, so:

- each file is parsed (a duplicate key fails: YAML keeps the last one silently) and must hold the
  kind expected of it;
- the objects are validated against the Kubernetes API's schema by tests/deploy/k8s_schema.mjs
  with the npm package kubernetes-models (pinned in package-lock.json; offline, unlike kubeconform
  or kubeval, which fetch schemas and are not packaged by Debian 12 nor npm; Debian's kubectl 1.20
  needs a cluster to validate), strict about unknown fields;
- then the cross-checks no schema can make: the pod (k8s_pod.py), selectors matching the pods, the
  Service's target port, the PodDisruptionBudget, and the HPA's metric being a gauge isolane
  exports (src/ and README's metrics table) with a prometheus-adapter rule that serves it.
"""

import json
import os
import re
import subprocess

import yaml

from .common import R, read
from .k8s_pod import check_pod


class UniqueKeyLoader(yaml.SafeLoader):
    pass


def _mapping(loader, node, deep=False):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        keys.add(key)
    return loader.construct_mapping(node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

EXPECTED_KINDS = {
    "deployment.yaml": {("apps/v1", "Deployment")},
    "service.yaml": {("v1", "Service")},
    "pdb.yaml": {("policy/v1", "PodDisruptionBudget")},
    "hpa.yaml": {("autoscaling/v2", "HorizontalPodAutoscaler")},
    "prometheus-adapter.yaml": {("v1", "ConfigMap")},
}


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def load_objects(root):
    """Parses each expected file; returns its objects as {file, object}."""
    k8s = os.path.join(root, "deploy", "k8s")
    objects = []
    for name in sorted(EXPECTED_KINDS):
        path = os.path.join(k8s, name)
        try:
            docs = [d for d in yaml.load_all(read(path), Loader=UniqueKeyLoader) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            R.check(False, f"deploy/k8s/{name} parses", str(e).replace("\n", " "))
            continue
        kinds = {(d.get("apiVersion"), d.get("kind")) for d in docs if isinstance(d, dict)}
        R.check(kinds == EXPECTED_KINDS[name], f"deploy/k8s/{name} parses and holds "
                f"{'/'.join(k for _, k in EXPECTED_KINDS[name])}", str(kinds))
        objects += [{"file": f"deploy/k8s/{name}", "object": d} for d in docs]
    return objects


def check_schema(root, node, objects):
    """The API's schema, offline."""
    script = os.path.join(root, "tests", "deploy", "k8s_schema.mjs")
    models = os.path.join(root, "node_modules", "kubernetes-models", "package.json")
    if not node or not os.access(node, os.X_OK):
        R.check(False, "Kubernetes schema validation", f"no node to run it ({node}); "
                "scripts/setup.sh installs the pinned one")
    elif not os.path.isfile(models):
        R.check(False, "Kubernetes schema validation", "node_modules/kubernetes-models is "
                "missing: run scripts/setup.sh (npm ci)")
    else:
        run = subprocess.run([node, script], input=json.dumps(objects), capture_output=True,
                             text=True, timeout=120)
        for line in run.stdout.splitlines():
            status, _, rest = line.partition(" ")
            R.check(status == "ok", f"schema (kubernetes-models): {rest.split(':')[0]}",
                    rest.partition(": ")[2])
        if run.returncode != 0 and "FAIL" not in run.stdout:
            R.check(False, "schema validation ran", run.stderr.strip()[-500:])


def check_k8s(root, server, node, dockerfile):
    objects = load_objects(root)
    check_schema(root, node, objects)

    def find(kind):
        found = [o["object"] for o in objects if o["object"].get("kind") == kind]
        return found[0] if found else None

    dep, svc, pdb, hpa, adapter = (find(k) for k in (
        "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ConfigMap"))
    if not dep:
        R.check(False, "a Deployment to check against")
        return
    pod = dep["spec"]["template"]
    labels = pod.get("metadata", {}).get("labels", {})
    R.check(matches(dep["spec"].get("selector", {}).get("matchLabels"), labels),
            "the Deployment's selector matches its pods' labels")
    ports = check_pod(root, server, pod, dockerfile)
    if ports is None:
        return
    check_service_and_pdb(svc, pdb, labels, ports)
    metric = check_hpa(server, dep, hpa)
    check_adapter(server, adapter, metric)


def check_service_and_pdb(svc, pdb, labels, ports):
    if svc:
        R.check(matches(svc["spec"].get("selector"), labels), "the Service selects the pods")
        targets = [p.get("targetPort") for p in svc["spec"].get("ports", [])]
        R.check(all((t in ports) if isinstance(t, str) else (t in ports.values()) for t in targets)
                and ports.get("http") in [ports.get(t, t) for t in targets],
                "the Service targets the http container port", str(targets))
    if pdb:
        R.check(matches(pdb["spec"].get("selector", {}).get("matchLabels"), labels),
                "the PodDisruptionBudget selects the Deployment's pods")
        R.check(("maxUnavailable" in pdb["spec"]) != ("minAvailable" in pdb["spec"]),
                "the PodDisruptionBudget sets maxUnavailable or minAvailable")


def check_hpa(server, dep, hpa):
    """Returns the name of the metric the HPA follows, None if none."""
    metric = None
    if hpa:
        ref = hpa["spec"].get("scaleTargetRef", {})
        R.check((ref.get("apiVersion"), ref.get("kind"), ref.get("name"))
                == (dep["apiVersion"], "Deployment", dep["metadata"]["name"]),
                "the HPA scales the Deployment")
        R.check("replicas" not in dep["spec"], "the Deployment leaves replicas to the HPA")
        R.check(hpa["spec"].get("minReplicas", 1) <= hpa["spec"]["maxReplicas"]
                and hpa["spec"].get("minReplicas", 1) >= 2, "HPA: 2 <= minReplicas <= maxReplicas")
        pods = [m["pods"] for m in hpa["spec"].get("metrics", []) if m.get("type") == "Pods"]
        if R.check(len(pods) == 1 and pods[0]["target"].get("type") == "AverageValue",
                   "the HPA follows one Pods metric's AverageValue"):
            metric = pods[0]["metric"]["name"]
            R.check(server.exports_metric(metric),
                    f"the HPA's metric {metric} is a gauge isolane exports (src/, README's table)")
    return metric


def check_adapter(server, adapter, metric):
    if adapter:
        try:
            rules = yaml.load(adapter["data"]["config.yaml"], Loader=UniqueKeyLoader)["rules"]
        except (KeyError, TypeError, yaml.YAMLError) as e:
            R.check(False, "the adapter's config.yaml parses", str(e))
            return
        for rule in rules:
            series = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", rule.get("seriesQuery", ""))
            name = series.group(1) if series else None
            R.check(name is not None and server.exports_metric(name),
                    f"adapter rule: {name} is a gauge isolane exports")
            overrides = rule.get("resources", {}).get("overrides", {})
            query = rule.get("metricsQuery", "")
            R.check(overrides.get("pod", {}).get("resource") == "pod"
                    and overrides.get("namespace", {}).get("resource") == "namespace"
                    and all(t in query for t in ("<<.LabelMatchers>>", "<<.GroupBy>>"))
                    and ("<<.Series>>" in query or (name or "?") in query),
                    f"adapter rule for {name}: per-pod resources and a grouped metricsQuery")
        if metric:
            served = [r for r in rules
                      if re.match(rf"\s*{re.escape(metric)}\b", r.get("seriesQuery", ""))
                      and r.get("name", {}).get("as", metric) == metric]
            R.check(len(served) == 1, f"the adapter serves the HPA's metric {metric}")
