"""Schemathesis hooks for Landfall's fuzz suite (test/fuzz/schemathesis.test.ts).

Generated ids are random UUIDs, so nearly every request would stop at a 404 before the code that
handles it. Seeded ids get requests past it: a well-formed UUID that Schemathesis generated for a
cluster, infra-env, host or BMC-host id (in the path, the query or a JSON body) is replaced, with
probability FUZZ seeds' `probability`, by the id of a resource the test created, picked so that
the ids of one request belong together (the host is in the infra-env, which is bound to the
cluster). Malformed ids (negative cases) are left alone: they are what the validator must refuse.

Deleting a seeded resource would leave every later request at the 404 again, so a DELETE of a
cluster, an infra-env or a host is pointed at a throw-away chain (cluster, infra-env, host) that
the test's seeder endpoint creates for it, when the test runs one (the user's run). That holds
for every such DELETE that names a seeded resource, seeded or not: Schemathesis' stateful phase
follows links, so an unseeded DELETE can carry an id it read from a seeded response (the hosts of
a listed infra-env). A DELETE of a seeded resource with no throw-away chain to point at (no
seeder, or a BMC host) gets a random id instead. Without this, one unlucky link deleted the
shared cluster and every later request of both runs, the agent's included, ended at a 404.

positive_data_acceptance (ST202) says a request the document allows was refused. The document
cannot say everything the API checks (a pull secret must be JSON with "auths", a manifest must not
be empty, networks must not overlap, a log upload must be a .tar.gz: what assisted-service checks
too), and a NUL character anywhere is a 400 by design (PostgreSQL cannot store it). So an ST202 is
dropped when its 400 is one of those rules, and kept when the 400 came from the OpenAPI validator
(its reason is the request part and the field's path, then a colon: `query.role: …`): that is the
document disagreeing with itself, a real failure. Dropped ones are counted by reason in the stats.

Every request is counted (seeded or not, by status); the counts are written to the seeds' `stats`
file at exit, so the test can say how many requests got past the 404.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import re
import threading
import urllib.request
import uuid

import schemathesis

SEEDS = json.load(open(os.environ["LANDFALL_FUZZ_SEEDS"], encoding="utf-8"))
CHAINS: list[dict] = SEEDS["chains"]
PROBABILITY: float = SEEDS.get("probability", 0.9)
SEEDER: str | None = SEEDS.get("seeder")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ID_NAMES = ("cluster_id", "infra_env_id", "host_id", "bmc_host_id")
# Paths whose DELETE removes the resource a chain is made of.
DISPOSABLE = {"/v2/clusters/{cluster_id}", "/v2/infra-envs/{infra_env_id}", "/v2/infra-envs/{infra_env_id}/hosts/{host_id}"}
# DELETEs that remove or unlink a seeded resource: never given a shared id.
DESTRUCTIVE = DISPOSABLE | {"/v2/infra-envs/{infra_env_id}/bmc-hosts/{bmc_host_id}", "/v2/infra-envs/{infra_env_id}/hosts/{host_id}/bmc"}

rng = random.Random(SEEDS.get("seed", 1))
lock = threading.Lock()
seeded_cases: set[str] = set()
stats = {"requests": 0, "seeded": 0, "seeded_by_status": {}, "by_status": {}, "disposable_chains": 0, "semantic_400_dropped": {}}
# The validator's reasons: the request part and the field's path, a colon, the rule ("query.role: must be …").
VALIDATOR_REASON = re.compile(r"^(body|query|params|headers|path)([.\[][^:\s]*)?: ")
NUL_REASON = "must not contain a NUL (\\u0000) character"


def _pick(chain: dict, name: str) -> str | None:
    if name == "cluster_id":
        return chain.get("cluster_id")
    if name == "infra_env_id":
        return chain.get("infra_env_id")
    ids = chain.get("host_ids" if name == "host_id" else "bmc_host_ids") or []
    return rng.choice(ids) if ids else None


def _disposable_chain() -> dict | None:
    if not SEEDER:
        return None
    req = urllib.request.Request(f"{SEEDER}/chains", data=b"{}", method="POST", headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as res:
        return json.load(res)


def _seeded_ids() -> set[str]:
    ids: set[str] = set()
    for chain in CHAINS:
        for key in ("cluster_id", "infra_env_id"):
            if chain.get(key):
                ids.add(chain[key])
        ids.update(chain.get("host_ids") or [])
        ids.update(chain.get("bmc_host_ids") or [])
    return ids


SEEDED_IDS = _seeded_ids()


def _names_seeded(container: dict | None) -> bool:
    return isinstance(container, dict) and any(isinstance(v, str) and v in SEEDED_IDS for v in container.values())


def _replace(container: dict | None, chain: dict) -> bool:
    """Replaces the well-formed ids of `container` by the chain's; whether any was replaced."""
    if not isinstance(container, dict):
        return False
    replaced = False
    for name in ID_NAMES:
        value = container.get(name)
        if isinstance(value, str) and UUID.match(value):
            seeded = _pick(chain, name)
            if seeded:
                container[name] = seeded
                replaced = True
    # Lists of host ids (events?host_ids=…).
    hosts = container.get("host_ids")
    if isinstance(hosts, list) and hosts and all(isinstance(v, str) and UUID.match(v) for v in hosts) and chain.get("host_ids"):
        container["host_ids"] = [rng.choice(chain["host_ids"]) for _ in hosts]
        replaced = True
    return replaced


@schemathesis.hook
def before_call(context, case, kwargs):
    seeded = False
    with lock:
        stats["requests"] += 1
        use_seed = rng.random() < PROBABILITY
        chain = rng.choice(CHAINS)
    if case.method.upper() == "DELETE" and case.path in DESTRUCTIVE and (use_seed or _names_seeded(case.path_parameters)):
        fresh = _disposable_chain() if case.path in DISPOSABLE else None
        if fresh:
            chain, use_seed = fresh, True
            with lock:
                stats["disposable_chains"] += 1
        else:
            # Nothing to throw away (no seeder, or a BMC host): a random id, never the shared one.
            for name, value in list(case.path_parameters.items()):
                if value in SEEDED_IDS:
                    case.path_parameters[name] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            use_seed = False
    if use_seed:
        with lock:
            seeded = _replace(case.path_parameters, chain) | _replace(case.query, chain)
            if isinstance(case.body, dict):
                seeded = _replace(case.body, chain) or seeded
    if seeded:
        with lock:
            seeded_cases.add(case.id)


@schemathesis.hook
def after_call(context, case, response):
    status = str(response.status_code)
    with lock:
        seeded = case.id in seeded_cases
        seeded_cases.discard(case.id)
        stats["by_status"][status] = stats["by_status"].get(status, 0) + 1
        if seeded:
            stats["seeded"] += 1
            stats["seeded_by_status"][status] = stats["seeded_by_status"].get(status, 0) + 1


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if getattr(failure, "code", None) != "ST202" or response.status_code != 400:
        return True
    try:
        reason = str(json.loads(response.content).get("reason", ""))
    except ValueError:
        return True
    if VALIDATOR_REASON.match(reason) and NUL_REASON not in reason:
        return True
    key = "NUL character" if NUL_REASON in reason else re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", reason)[:120]
    with lock:
        stats["semantic_400_dropped"][key] = stats["semantic_400_dropped"].get(key, 0) + 1
    return False


@atexit.register
def _write_stats() -> None:
    path = SEEDS.get("stats")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(stats, f)
