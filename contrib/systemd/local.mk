# SPDX-License-Identifier: Apache-2.0
#
# contrib/systemd/: the daemons' systemd units.  Each is made from its .in
# with the configured directories (the programs' install paths), installed
# in $(systemdsystemunitdir) (configure --with-systemdsystemunitdir), and
# checked by tests/test-units.sh.

SYSTEMD_UNITS = \
	contrib/systemd/qtfs-server.service \
	contrib/systemd/rexecd.service \
	contrib/systemd/bm-api.service \
	contrib/systemd/bm-controller.service \
	contrib/systemd/bm-handler.service \
	contrib/systemd/autoscale.service

EXTRA_DIST += $(SYSTEMD_UNITS:=.in)
CLEANFILES += $(SYSTEMD_UNITS)
if SYSTEMD_UNITS
systemdsystemunit_DATA = $(SYSTEMD_UNITS)
else
noinst_DATA = $(SYSTEMD_UNITS)
endif

subst_units = sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@bindir[@]|$(bindir)|g'

$(SYSTEMD_UNITS): Makefile
	$(AM_V_GEN)$(MKDIR_P) $(@D) && rm -f $@ $@.tmp && \
	$(subst_units) $(srcdir)/$@.in >$@.tmp && \
	if grep -n '@[a-z_]*@' $@.tmp >&2; then rm -f $@.tmp; exit 1; fi && \
	mv $@.tmp $@
contrib/systemd/qtfs-server.service: $(srcdir)/contrib/systemd/qtfs-server.service.in
contrib/systemd/rexecd.service: $(srcdir)/contrib/systemd/rexecd.service.in
contrib/systemd/bm-api.service: $(srcdir)/contrib/systemd/bm-api.service.in
contrib/systemd/bm-controller.service: $(srcdir)/contrib/systemd/bm-controller.service.in
contrib/systemd/bm-handler.service: $(srcdir)/contrib/systemd/bm-handler.service.in
contrib/systemd/autoscale.service: $(srcdir)/contrib/systemd/autoscale.service.in
