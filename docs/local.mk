# docs/: installed under $(docdir) in the layout of the source tree, so the
# links of the installed README (docs/api.md, ucx_plugin/README.md, ...)
# resolve there too.
gdrxdocsdir = $(docdir)/docs
dist_gdrxdocs_DATA = docs/api.md docs/compat.md docs/semantics.md docs/free-interception.md \
	docs/gdrdrv.md docs/nvrm.md docs/mpi.md docs/performance.md docs/ucx-flavours.md
gdrxucxdocdir = $(docdir)/ucx_plugin
dist_gdrxucxdoc_DATA = ucx_plugin/README.md ucx_plugin/ucx.conf.sample
# The contributor guide, which the README names, beside the README.
dist_doc_DATA += CONTRIBUTING.md

# The results tree (one folder per GPU run: machine, commit, command, raw
# output, CSV) is distributed, not installed.
EXTRA_DIST += results tools/results-osu-csv.awk tools/results-copylat-csv.awk
