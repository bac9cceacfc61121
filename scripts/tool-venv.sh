# Sourced by the test and build scripts (not run): a Python tool from PyPI in its own
# virtualenv under the target directory, installed once and reused.
#
#   tool_venv DIR COMMAND REQUIREMENT   installs REQUIREMENT into DIR unless DIR/bin/COMMAND
#                                       exists; prints DIR/bin/COMMAND
tool_venv() {
  local dir=$1 command=$2 requirement=$3
  if [ ! -x "$dir/bin/$command" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
  fi
  echo "$dir/bin/$command"
}
