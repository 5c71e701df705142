# docs/: installed under $(docdir) in the layout of the source tree, so the
# links of the installed README (docs/api.md, ucx_plugin/README.md, ...)
# resolve there too.
gdrxdocsdir = $(docdir)/docs
dist_gdrxdocs_DATA = docs/api.md docs/compat.md docs/semantics.md docs/free-interception.md \
	docs/gdrdrv.md docs/nvrm.md docs/mpi.md docs/performance.md docs/ucx-flavours.md \
	docs/h200-copylat.txt docs/h200-nvrm-run.txt docs/h200-nvrm-export-probe.txt \
	docs/h200-early-alloc-run.txt docs/h200-osu-ucx-versions.txt docs/h200-gdrapi-run.txt docs/h200-gdrapi-span-run.txt \
	docs/h200-gdrapi-final-run.txt docs/h200-churn.txt docs/h200-integrity-run.txt \
	docs/gpu-run-2026-12-06.txt docs/gpu-table-run-2026-12-06.txt docs/gpu-run2-2026-12-06.txt docs/gpu-run3-2026-12-06.txt \
	docs/gpu-run4-2026-12-06.txt docs/gpu-run5-2026-12-06.txt docs/gpu-h200-run-2026-12-06.txt \
	docs/gpu-h100-run-2026-12-07.txt
gdrxucxdocdir = $(docdir)/ucx_plugin
dist_gdrxucxdoc_DATA = ucx_plugin/README.md ucx_plugin/ucx.conf.sample
# The contributor guide, which the README names, beside the README.
dist_doc_DATA += CONTRIBUTING.md
