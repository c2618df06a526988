"""A one-line forwarding package, as a user switching to tilewise would write it: ``import openslide`` (and
``openslide.lowlevel``, ``openslide.deepzoom``) resolve to tilewise's modules. Used to run openslide-python's
own test suite against tilewise (tests/compat/run_openslide_suite.sh)."""

import sys

import tilewise.openslide
import tilewise.openslide.deepzoom
import tilewise.openslide.lowlevel

sys.modules.update({"openslide": tilewise.openslide, "openslide.deepzoom": tilewise.openslide.deepzoom,
                    "openslide.lowlevel": tilewise.openslide.lowlevel})
