#!/bin/sh
# doc-history.sh check SRCDIR
#
# The guides say what is, not how the project found out: no issue or
# defect numbers and no run dates in README.md, ucx_plugin/README.md and
# docs/*.md.  History goes to NEWS; a figure names its run folder under
# results/ (whose README holds the dates).  Another project's issue
# ("gdrcopy issue #115") is a reference, not history.  Exit 1, naming
# each line.
set -eu
if [ $# -ne 2 ] || [ "$1" != check ]; then
    echo "usage: $0 check SRCDIR" >&2
    exit 2
fi
cd "$2"
bad=$(grep -nE '[Ii]ssues? #?[0-9]+|[Dd]efects? [0-9]+|20[0-9][0-9]-[01][0-9]-[0-3][0-9]' \
          README.md ucx_plugin/README.md docs/*.md | grep -v 'gdrcopy issue' || true)
if [ -n "$bad" ]; then
    echo "$bad" | sed 's/^/doc-history.sh: history in a guide: /'
    exit 1
fi
echo "guides: no issue numbers or run dates"
