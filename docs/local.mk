# docs/: installed under $(docdir) in the layout of the source tree, so the
# links of the installed README (docs/README.md, ucx_plugin/README.md, ...)
# resolve there too.
gdrxdocsdir = $(docdir)/docs
dist_gdrxdocs_DATA = docs/README.md docs/install.md docs/mpi.md docs/ucx-flavours.md \
	docs/performance.md docs/troubleshooting.md docs/api.md docs/compat.md docs/drivers.md \
	docs/semantics.md docs/gdrdrv.md docs/nvrm.md docs/free-interception.md docs/arm64.md
gdrxucxdocdir = $(docdir)/ucx_plugin
dist_gdrxucxdoc_DATA = ucx_plugin/README.md ucx_plugin/ucx.conf.sample
# The contributor guide, which the README names, beside the README.
dist_doc_DATA += CONTRIBUTING.md

# The results tree (one folder per GPU run: machine, commit, command, raw
# output, CSV) is distributed, not installed: the guides' tables are made
# from it (tools/results-tables.sh), and the tarball's make check checks
# them as the repository's does.
EXTRA_DIST += results tools/results-tables.sh tools/results-tables.awk \
	tools/results-osu-csv.awk tools/results-copylat-csv.awk \
	tools/doc-messages.sh tools/doc-messages.awk tools/doc-history.sh

# `make docs-tables`: rewrite the guides' generated tables from results/
# (in the source tree: run it after adding a run, then commit both).
docs-tables:
	$(SHELL) $(srcdir)/tools/results-tables.sh update $(srcdir)
.PHONY: docs-tables

# `make check-docs` (part of make check): the guides' tables are what
# results/ makes, and docs/troubleshooting.md lists every message the
# sources can print (tools/doc-messages.sh says which calls count), and
# the guides hold no history (tools/doc-history.sh).
check-docs:
	@echo "=== suite check-docs"
	@p=0; f=0; \
	for t in "results-tables.sh check" "doc-messages.sh check" "doc-history.sh check"; do \
	  if $(SHELL) $(srcdir)/tools/$$t $(srcdir); then p=$$((p + 1)); \
	  else f=$$((f + 1)); echo "check-docs: FAILED: tools/$$t"; fi; \
	done; \
	if test -n "$(GDRX_RESULTS)"; then echo "check-docs $$p $$f" >> "$(GDRX_RESULTS)"; fi; \
	test $$f -eq 0
GDRX_CHECK_EXTRA += check-docs
.PHONY: check-docs
