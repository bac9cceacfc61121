#!/usr/bin/env python3
"""docs/images/editors-neovim.png: Neovim under tmux, with computeguard lsp's diagnostics.

Runs Neovim (Debian's 0.7.2 here) in a detached tmux session of its own (a private socket,
killed at the end), configured with the Lua snippet docs/editors.md shows under "Neovim"
(taken from the page, so the picture is of that configuration), on FILE at LINE; waits for
the server's diagnostics (signs and virtual text), opens the diagnostic float of LINE,
captures the pane with its colours (`tmux capture-pane -e -p`), turns the ANSI escapes into
HTML and has headless Chromium render that page to a PNG. Needs nvim, tmux and chromium
(Debian: neovim, tmux, chromium) and a debug build of computeguard (built here).

    scripts/editors-screenshot.py [--file FILE] [--line N] [--top N] [--out PNG]

The default FILE is the shared corpus's Terraform GPU pool (../shared/corpus), whose VM size
comes from a variable in the module's other file; without the corpus, a repository example.
"""

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_FILE = os.path.join(
    ROOT, "..", "shared", "corpus", "terraform", "aks-gpu-terraform-main-gpu-pool-autoscale.tf"
)
EXAMPLE = os.path.join(ROOT, "examples", "azureml", "cuda12-on-k80-job.yml")
COLS, ROWS = 132, 34
SOCKET = f"computeguard-shot-{os.getpid()}"

# xterm's 256 colours, the first 16 a little softer on the dark background.
BASE16 = [
    "#1d1f21", "#cc6666", "#8fb573", "#e6c07b", "#6d9cd4", "#b294bb", "#6fb3b8", "#c5c8c6",
    "#666a6e", "#ff7b7b", "#b5e48c", "#ffd787", "#81a2ff", "#d7a6ff", "#8ae8e8", "#ffffff",
]
DEFAULT_FG, DEFAULT_BG = "#d0d0d0", "#1d1f21"


def palette(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    g = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (g, g, g)


def neovim_config():
    """The first Lua block of docs/editors.md's "## Neovim" section."""
    page = open(os.path.join(ROOT, "docs", "editors.md"), encoding="utf-8").read()
    section = page.split("\n## Neovim", 1)[1]
    m = re.search(r"```lua\n(.*?)```", section, re.S)
    if not m:
        sys.exit("editors-screenshot: no lua block under ## Neovim in docs/editors.md")
    return m.group(1)


def ansi_to_html(text):
    """SGR escapes (what `tmux capture-pane -e` writes) to <span>s with inline colours."""
    out = []
    state = {"fg": None, "bg": None, "ul": None, "bold": False, "italic": False, "under": False,
             "rev": False}

    def colour(params, i):
        # 38;5;N / 38;2;R;G;B (and the colon forms, split the same way)
        if i + 1 < len(params) and params[i + 1] == 5 and i + 2 < len(params):
            return palette(params[i + 2]), i + 3
        if i + 1 < len(params) and params[i + 1] == 2 and i + 4 < len(params):
            r, g, b = params[i + 2 : i + 5]
            return "#%02x%02x%02x" % (r, g, b), i + 5
        return None, i + 1

    def sgr(params):
        i = 0
        while i < len(params):
            p = params[i]
            if p == 0:
                state.update(fg=None, bg=None, ul=None, bold=False, italic=False, under=False,
                             rev=False)
            elif p == 1:
                state["bold"] = True
            elif p == 3:
                state["italic"] = True
            elif p in (4, 21):
                state["under"] = True
            elif p == 7:
                state["rev"] = True
            elif p == 22:
                state["bold"] = False
            elif p == 23:
                state["italic"] = False
            elif p == 24:
                state["under"] = False
            elif p == 27:
                state["rev"] = False
            elif 30 <= p <= 37:
                state["fg"] = palette(p - 30)
            elif 90 <= p <= 97:
                state["fg"] = palette(p - 90 + 8)
            elif 40 <= p <= 47:
                state["bg"] = palette(p - 40)
            elif 100 <= p <= 107:
                state["bg"] = palette(p - 100 + 8)
            elif p == 39:
                state["fg"] = None
            elif p == 49:
                state["bg"] = None
            elif p in (38, 48, 58):
                c, i = colour(params, i)
                state[{38: "fg", 48: "bg", 58: "ul"}[p]] = c
                continue
            elif p == 59:
                state["ul"] = None
            i += 1

    def style():
        fg, bg = state["fg"] or DEFAULT_FG, state["bg"]
        if state["rev"]:
            fg, bg = bg or DEFAULT_BG, fg
        css = [f"color:{fg}"]
        if bg:
            css.append(f"background:{bg}")
        if state["bold"]:
            css.append("font-weight:bold")
        if state["italic"]:
            css.append("font-style:italic")
        if state["under"]:
            css.append("text-decoration:underline " + (state["ul"] or "currentColor"))
        return ";".join(css)

    for line in text.split("\n"):
        parts = re.split(r"\x1b\[([0-9;:]*)m", line)
        row = []
        for k, part in enumerate(parts):
            if k % 2:
                nums = [int(x) if x else 0 for x in re.split(r"[;:]", part)] if part else [0]
                sgr(nums)
            elif part:
                row.append(f'<span style="{style()}">{html.escape(part)}</span>')
        out.append("".join(row))
    return "\n".join(out)


def tmux(*args, check=True):
    return subprocess.run(
        ["tmux", "-u", "-L", SOCKET, "-f", "/dev/null", *args],
        check=check,
        capture_output=True,
        text=True,
    ).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = CORPUS_FILE if os.path.isfile(CORPUS_FILE) else EXAMPLE
    ap.add_argument("--file", default=default)
    ap.add_argument("--line", type=int, default=119 if default == CORPUS_FILE else 24,
                    help="the line whose diagnostics open in a float")
    ap.add_argument("--top", type=int, default=113 if default == CORPUS_FILE else 1,
                    help="the first line shown")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "images", "editors-neovim.png"))
    args = ap.parse_args()
    for tool in ("nvim", "tmux", "chromium"):
        if not shutil.which(tool):
            sys.exit(f"editors-screenshot: `{tool}` is not installed (Debian: apt-get install "
                     f"{'neovim' if tool == 'nvim' else tool})")
    subprocess.run(["cargo", "build", "-q", "-p", "computeguard"], cwd=ROOT, check=True)
    bin_dir = os.path.join(ROOT, "target", "debug")
    target = os.path.realpath(args.file)
    # Neovim runs in the file's grandparent folder, so the status line names the file as
    # `terraform/main.tf` does, not by its full path.
    start = os.path.dirname(os.path.dirname(target))

    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.lua")
        with open(init, "w", encoding="utf-8") as f:
            f.write(neovim_config())
            # Line numbers, and the default colours but for a dark float and sign column.
            f.write('vim.o.number = true\nvim.o.signcolumn = "yes"\nvim.o.background = "dark"\n'
                    'vim.cmd("highlight SignColumn ctermbg=NONE")\n'
                    'vim.cmd("highlight NormalFloat ctermbg=236")\n')
        cmd = (
            f"env PATH={bin_dir}:$PATH LANG=C.UTF-8 TERM=tmux-256color "
            f"nvim -i NONE -n -u {init} "
            f"-c 'normal! {args.top}Gzt{args.line}G' {os.path.relpath(target, start)}"
        )
        tmux("new-session", "-d", "-s", "shot", "-x", str(COLS), "-y", str(ROWS), "-c", start, cmd)
        try:
            tmux("set-option", "-g", "status", "off")
            # The diagnostics arrive when `E` (or W, I, H) is in the sign column of LINE.
            deadline = time.time() + 120
            row = args.line - args.top
            while True:
                lines = tmux("capture-pane", "-p", "-t", "shot").split("\n")
                if len(lines) > row and re.match(r"^[EWIH] ", lines[row]):
                    break
                if time.time() > deadline:
                    sys.exit("editors-screenshot: no diagnostics within 2 minutes:\n"
                             + "\n".join(lines))
                time.sleep(0.2)
            tmux("send-keys", "-t", "shot", ":lua vim.diagnostic.open_float()", "Enter")
            time.sleep(1.0)
            tmux("send-keys", "-t", "shot", ":", "Escape")
            time.sleep(0.3)
            ansi = tmux("capture-pane", "-e", "-p", "-t", "shot")
        finally:
            tmux("kill-server", check=False)

        page = os.path.join(tmp, "screen.html")
        body = ansi_to_html(ansi.rstrip("\n"))
        with open(page, "w", encoding="utf-8") as f:
            f.write(
                "<!doctype html><meta charset=utf-8><style>"
                f"html,body{{margin:0;background:{DEFAULT_BG}}}"
                "pre{margin:0;padding:8px 10px;font:13px/18px 'DejaVu Sans Mono',monospace;"
                f"color:{DEFAULT_FG}}}</style><pre>{body}</pre>"
            )
        width = int(COLS * 7.83) + 20 + 4
        height = ROWS * 18 + 16
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        chrome = ["chromium", "--headless", "--disable-gpu", "--hide-scrollbars",
                  f"--screenshot={os.path.abspath(args.out)}", f"--window-size={width},{height}",
                  "--force-device-scale-factor=1", f"file://{page}"]
        if os.geteuid() == 0:
            chrome.insert(1, "--no-sandbox")
        subprocess.run(chrome, check=True, capture_output=True)
    print(f"{args.out}: {os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
