#!/usr/bin/env python3
"""Names the policy runtime's functions in a `perf report` of a component evaluation.

wasmtime's cached artifacts name a guest function `wasm[0]::function[N]`, and the built-in
component is stripped. A build of the runtime with its name section has the same code and the
same function indices, so its names can stand in:

    CARGO_PROFILE_GUEST_STRIP=none CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="-C target-feature=+simd128" \
      cargo build -p computeguard-runtime --target wasm32-wasip2 --profile guest --target-dir /tmp/gtarget
    perf record -g -o /tmp/perf.data target/release/examples/profile component k8s_h100_inference 20000
    perf report -i /tmp/perf.data --no-children --sort sym -g none | \
      scripts/guest-symbols.py /tmp/gtarget/wasm32-wasip2/guest/computeguard_runtime.wasm

It reads the report on standard input and prints it with every `wasm[0]::function[N]`
followed by the function's name, demangled by `rustfilt` or binutils' `c++filt` when one
is installed. Measurements that
used it: docs/benchmarks.md, section 22.
"""
import re
import shutil
import subprocess
import sys


def leb(data, i):
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def function_names(module):
    """The function names of a core module's `name` section (subsection 1)."""
    names, i = {}, 8
    while i < len(module):
        section = module[i]
        size, i = leb(module, i + 1)
        end = i + size
        if section == 0:
            length, j = leb(module, i)
            if module[j:j + length] == b"name":
                j += length
                while j < end:
                    sub = module[j]
                    sub_size, j = leb(module, j + 1)
                    sub_end = j + sub_size
                    if sub == 1:
                        count, j = leb(module, j)
                        for _ in range(count):
                            index, j = leb(module, j)
                            length, j = leb(module, j)
                            names[index] = module[j:j + length].decode("utf-8", "replace")
                            j += length
                    j = sub_end
        i = end
    return names


def first_core_module(component):
    """The first core module of a component (section 1), or the file itself if it is a module."""
    if component[4:8] == b"\x01\x00\x00\x00":
        return component
    i = 8
    while i < len(component):
        section = component[i]
        size, i = leb(component, i + 1)
        if section == 1:
            return component[i:i + size]
        i += size
    sys.exit("no core module in the component")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        names = function_names(first_core_module(f.read()))
    if not names:
        sys.exit(f"{sys.argv[1]} has no function names: build it with CARGO_PROFILE_GUEST_STRIP=none")
    text = sys.stdin.read()
    used = sorted({int(n) for n in re.findall(r"wasm\[0\]::function\[(\d+)\]", text)})
    shown = {n: names.get(n, "?") for n in used}
    demangler = shutil.which("rustfilt") or shutil.which("c++filt")
    if demangler and shown:
        out = subprocess.run([demangler], input="\n".join(shown.values()), capture_output=True, text=True).stdout
        shown = dict(zip(shown, out.splitlines()))
    print(re.sub(r"wasm\[0\]::function\[(\d+)\]", lambda m: f"{m.group(0)} {shown[int(m.group(1))]}", text), end="")


if __name__ == "__main__":
    main()
