#!/usr/bin/env python3
"""Kubernetes' OpenAPI v2 document (api/openapi-spec/swagger.json) -> one JSON schema per kind, for kubeconform.

    openapi2jsonschema.py SWAGGER_JSON OUT_DIR KIND...

Each schema is standalone (every $ref inlined) and strict (an object with declared properties takes no other
key, as `kubectl --validate=strict` and the API server's field validation reject them), and is named the way
kubeconform's -schema-location template finds it: `{{ .ResourceKind }}{{ .KindSuffix }}.json`, e.g.
deployment-apps-v1.json, configmap-v1.json. As in kubeconform's own converter (scripts/openapi2jsonschema.py,
for CRDs), int-or-string fields take a string or an integer; a resource.Quantity takes a string or a number
(`cpu: 2`), which the API server accepts. Standard library only: build.sh runs it before any venv exists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
DROPPED = ("description",)


def schema_file(kind: str, group: str, version: str) -> str:
    """kubeconform's file name: KindSuffix is -<first label of the group>-<version>, or -<version> for core."""
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{kind.lower()}{suffix}.json".lower()


def expand(node: Any, definitions: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """``node`` with every $ref inlined and strictness added; a type that contains itself is left open."""
    if isinstance(node, list):
        return [expand(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return {}
        if name == QUANTITY:
            return {"oneOf": [{"type": "string"}, {"type": "number"}]}
        return expand(definitions[name], definitions, seen | {name})
    if node.get("format") == "int-or-string":
        return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED:
            continue
        if key == "properties":  # a map of names to schemas, not a schema itself
            out[key] = {name: expand(schema, definitions, seen) for name, schema in value.items()}
        else:
            out[key] = expand(value, definitions, seen)
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    definitions = json.loads(Path(argv[1]).read_text())["definitions"]
    out_dir, kinds = Path(argv[2]), set(argv[3:])
    out_dir.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()
    for name, definition in sorted(definitions.items()):
        for gvk in definition.get("x-kubernetes-group-version-kind", ()):
            if gvk["kind"] in kinds:
                schema = expand(definition, definitions, frozenset({name}))
                path = out_dir / schema_file(gvk["kind"], gvk["group"], gvk["version"])
                path.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
                written.add(gvk["kind"])
    missing = sorted(kinds - written)
    if missing:
        print(f"openapi2jsonschema.py: no definition for kind(s) {', '.join(missing)} in {argv[1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
