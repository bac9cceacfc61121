"""Evaluate JSON documents with a computeguard policy component from Python.

Uses only the WIT contract (``wit/policy.wit``) and wasmtime-py's component
API (``wasmtime.component``): no computeguard code.

    python embed.py POLICY.wasm --as-of YYYY-MM-DD [--settings FILE] [--context FILE] [--timings] DOCUMENT.json...
    python embed.py POLICY.wasm --as-of YYYY-MM-DD [--context FILE] --contract TABLE.jsonl [--reuse]

``--context`` gives every fresh instance the JSON text of FILE through the contract's
``context`` interface (``configure``: catalog overlays and Azure facts) before its
first call; a context the policy refuses is an error (exit 2).

``--contract`` runs a table of calls (docs/embedding.md, "The contract test"), each on
a fresh instance, or with ``--reuse`` all on one instance. A call with a ``context``
file (relative to the table) always gets a fresh instance, configured with it first;
when the policy refuses it, the line is ``{"case":…,"configure":"<the policy's error>"}``
and the call is not made.

Prints one line per document in the canonical form of ``docs/embedding.md``
(the Rust and Node examples print the same bytes). ``--timings`` adds one JSON
line on stderr: compile, instantiate and first-evaluation times.

Exit codes: 0 every document evaluated (a policy error result is printed as
a line); 2 usage error, unreadable file, a policy that cannot be loaded,
refused settings, or a trap.
"""

import argparse
import json
import os
import sys
import time

import jsonschema
import wasmtime
from wasmtime.component import Component, Linker, Record, Variant

INTERFACE = "computeguard:policy/evaluator@0.2.0"
# Exported by every policy `computeguard build` makes (world policy-with-context).
CONTEXT_INTERFACE = "computeguard:policy/context@0.2.0"
# Linear memory one policy instance may use.
MEMORY_LIMIT = 64 << 20
# Instructions (roughly) one call may execute before it traps.
FUEL = 2_000_000_000


class Policy:
    """A compiled policy component. Every call gets a fresh store and instance,
    so no state leaks from one document to the next."""

    def __init__(self, path):
        config = wasmtime.Config()
        config.consume_fuel = True
        self.engine = wasmtime.Engine(config)
        self.component = Component.from_file(self.engine, path)
        self.linker = Linker(self.engine)
        self.linker.add_wasip2()
        # Policies import the types-only interface of the contract; it has no
        # functions, so an empty instance satisfies it.
        with self.linker.root() as root:
            with root.add_instance("computeguard:policy/types@0.2.0"):
                pass
        iface = self.component.get_export_index(INTERFACE)
        if iface is None:
            raise PolicyLoadError(f"`{path}` does not export {INTERFACE}")
        self.exports = {}
        for name in ("metadata", "validate-settings", "evaluate"):
            index = self.component.get_export_index(name, iface)
            if index is None:
                raise PolicyLoadError(f"`{path}` does not export {INTERFACE}#{name}")
            self.exports[name] = index
        self.path = path
        context = self.component.get_export_index(CONTEXT_INTERFACE)
        self.configure = (None if context is None
                          else self.component.get_export_index("configure", context))

    def instantiate(self):
        """A fresh sandbox: a new store with its limits, and a new instance."""
        store = wasmtime.Store(self.engine)
        # The default WasiConfig grants nothing: no preopened directories, no
        # environment or arguments, no sockets, stdin empty, stdout/stderr discarded.
        store.set_wasi(wasmtime.WasiConfig())
        store.set_limits(memory_size=MEMORY_LIMIT)
        store.set_fuel(FUEL)
        return store, self.linker.instantiate(store, self.component)

    def instantiate_with(self, context):
        """A fresh sandbox given `context` (JSON text; None: not configured) before any
        other call, and the policy's refusal (None when it took the context), which
        leaves the instance as it was."""
        sandbox = self.instantiate()
        refused = None
        if context is not None:
            if self.configure is None:
                raise PolicyLoadError(
                    f"`{self.path}` does not export {CONTEXT_INTERFACE}, so it takes no context")
            refused = self._call(sandbox, self.configure, context)
        return sandbox, refused

    def call(self, name, *args, sandbox=None):
        """Calls an evaluator function, in `sandbox` or else in a fresh one."""
        return self._call(sandbox or self.instantiate(), self.exports[name], *args)

    @staticmethod
    def _call(sandbox, index, *args):
        store, instance = sandbox
        func = instance.get_func(store, index)
        result = func(store, *args)
        func.post_return(store)
        return result


class PolicyLoadError(Exception):
    pass


def request(document, settings, as_of, source_kind="unknown"):
    # Records are `Record` objects whose attributes carry the WIT field names
    # (kebab-case, hence setattr); enums are their WIT case names as strings.
    r = Record()
    setattr(r, "document", document)
    setattr(r, "source-kind", source_kind)
    setattr(r, "operation", "none")
    setattr(r, "settings", settings)
    setattr(r, "as-of", as_of)
    return r


def canonical(case, result):
    """The canonical line for one evaluation (key order is part of the format)."""
    if isinstance(result, Variant):  # result<response, error>: the error variant
        return {"case": case, "error": {"kind": result.tag, "message": result.payload}}
    violations = [
        {
            "rule": v.rule,
            "severity": v.severity,
            "message": v.message,
            "path": v.path,
            "remediation": v.remediation,
            "resource": {"kind": v.resource.kind, "name": v.resource.name},
        }
        for v in result.violations
    ]
    violations.sort(key=sort_key)
    return {"case": case, "violations": violations}


def sort_key(v):
    """Field by field, comparing UTF-8 bytes (as Rust and the Node example do)."""
    fields = (v["rule"], v["severity"], v["message"], v["path"], v["remediation"],
              v["resource"]["kind"], v["resource"]["name"])
    return tuple(f.encode("utf-8") for f in fields)


def read_context(path):
    """The text of a context file, or None without one."""
    if path is None:
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def context_refused(policy, sandbox, file, problem):
    """The error for a --context file the policy refuses (a refused context changes
    nothing, so the same instance still names the policy)."""
    info = policy.call("metadata", sandbox=sandbox)
    return PolicyLoadError(f"policy `{info.name}` refuses the context in `{file}`: {problem}")


def run_contract(policy, table, as_of, reuse, context_file=None):
    """--contract: one canonical line per call of the table."""
    base = os.path.dirname(os.path.abspath(table))
    context = read_context(context_file)
    out = []
    shared = None
    with open(table, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f if line.strip()]
    for call in calls:
        if "context" in call:
            # A call with its own context: always a fresh instance, configured first.
            own_context = read_context(os.path.join(base, call["context"]))
            sandbox, refused = policy.instantiate_with(own_context)
            if refused is not None:
                line = {"case": call["case"], "configure": refused}
                out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
                continue
        else:
            if shared is None or not reuse:
                shared, refused = policy.instantiate_with(context)
                if refused is not None:
                    raise context_refused(policy, shared, context_file, refused)
            sandbox = shared
        if call["call"] == "validate-settings":
            line = {"case": call["case"],
                    "validate-settings": policy.call("validate-settings", call["settings"],
                                                     sandbox=sandbox)}
        elif call["call"] == "evaluate":
            with open(os.path.join(base, call["document"]), encoding="utf-8") as f:
                document = f.read()
            req = request(document, call["settings"], as_of, call.get("source-kind", "unknown"))
            line = canonical(call["case"], policy.call("evaluate", req, sandbox=sandbox))
        else:
            raise PolicyLoadError(f"unknown call `{call['call']}`")
        out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    sys.stdout.buffer.write("".join(l + "\n" for l in out).encode("utf-8"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy")
    parser.add_argument("documents", nargs="*")
    parser.add_argument("--as-of", required=True, metavar="YYYY-MM-DD")
    parser.add_argument("--settings", metavar="FILE")
    parser.add_argument("--context", metavar="FILE")
    parser.add_argument("--timings", action="store_true")
    parser.add_argument("--contract", metavar="TABLE")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_intermixed_args(argv)

    if args.contract:
        try:
            run_contract(Policy(args.policy), args.contract, args.as_of, args.reuse, args.context)
        except (OSError, wasmtime.WasmtimeError, PolicyLoadError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0

    try:
        settings = "{}"
        if args.settings:
            with open(args.settings, encoding="utf-8") as f:
                settings = f.read()
        context = read_context(args.context)

        start = time.perf_counter()
        policy = Policy(args.policy)
        compiled = time.perf_counter() - start

        start = time.perf_counter()
        sandbox, refused_context = policy.instantiate_with(context)
        instantiated = time.perf_counter() - start
        if refused_context is not None:
            raise context_refused(policy, sandbox, args.context, refused_context)
        info = policy.call("metadata", sandbox=sandbox)
        where = f" in `{args.settings}`" if args.settings else ""
        refused = f"policy `{info.name}` refuses the settings{where}"
        # The host checks settings against the policy's JSON Schema, for its
        # library's wording, then asks the policy, which checks them against the
        # same schema itself.
        schema = getattr(info, "settings-schema")
        if schema is not None:
            try:
                value = json.loads(settings)
            except ValueError as e:
                raise PolicyLoadError(f"{refused}: not valid JSON: {e}") from e
            schema = json.loads(schema)
            validator = jsonschema.validators.validator_for(schema)(schema)
            problems = [f"at `{e.json_path}`: {e.message}" for e in validator.iter_errors(value)]
            if problems:
                raise PolicyLoadError(f"{refused}: {'; '.join(problems)}")
        problem = policy.call("validate-settings", settings, sandbox=sandbox)
        if problem is not None:
            raise PolicyLoadError(f"{refused}: {problem}")

        first_evaluation = None
        lines = []
        for path in args.documents:
            with open(path, encoding="utf-8") as f:
                document = f.read()
            start = time.perf_counter()
            fresh, refused_context = policy.instantiate_with(context)
            if refused_context is not None:
                # The first instance took this context; a policy that answers otherwise
                # now is not deterministic.
                raise PolicyLoadError(f"policy `{info.name}` refused the context it accepted "
                                      f"before: {refused_context}")
            result = policy.call("evaluate", request(document, settings, args.as_of),
                                 sandbox=fresh)
            if first_evaluation is None:
                first_evaluation = time.perf_counter() - start
            line = canonical(os.path.basename(path), result)
            lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    except (OSError, wasmtime.WasmtimeError, PolicyLoadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    sys.stdout.buffer.write("".join(l + "\n" for l in lines).encode("utf-8"))
    if args.timings:
        ms = lambda s: round(s * 1000, 2)
        print(json.dumps({
            "host": "python",
            "compileMs": ms(compiled),
            "instantiateMs": ms(instantiated),
            "firstEvaluateMs": ms(first_evaluation) if first_evaluation is not None else None,
        }), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
