// libyaml (Debian libyaml-dev), found through pkg-config: the event parser the profile reader
// composes its node tree from. Nothing but the include.
#ifndef LINKCOND_CYAML_SHIM_H
#define LINKCOND_CYAML_SHIM_H

#include <yaml.h>

#endif
