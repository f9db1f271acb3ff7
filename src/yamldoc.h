/* yamldoc.h — one YAML document read from an input's text, within the input
 * limits: the config and model readers' loader.
 *
 * libyaml's own loader (yaml_parser_load) takes time that grows faster than
 * the input on deeply nested text and keeps duplicate keys, the last one
 * silently winning. This one builds the same yaml_document_t from the
 * parser's events, and stops at the first collection nested deeper than
 * DT_INPUT_MAX_DEPTH (before libyaml has scanned much past it), at a key
 * written twice in one mapping, at an anchor or alias (dtune's files need
 * none, and an alias can make a small file a large or cyclic tree), and at
 * a second document.
 */
#ifndef DTUNE_YAMLDOC_H
#define DTUNE_YAMLDOC_H

#include <stddef.h>

#include <yaml.h>

#include "dtune/error.h"

/* Why a document could not be read: the code (DT_EPARSE: not YAML, or
 * nested too deep; DT_EINVAL: a duplicate key, an anchor or alias, a second
 * document; DT_ENOMEM), where (libyaml's mark, counted from 0) and what. */
typedef struct dt_yamldoc_problem {
    int code;
    yaml_mark_t mark;
    char msg[600];
} dt_yamldoc_problem;

/* Reads text[0..len) (NUL-terminated) into *doc. Returns 0 with *doc to be
 * freed by yaml_document_delete (its root is NULL for an empty text), or the
 * code with *why filled and nothing to free. */
int dt_yamldoc_load(const char *text, size_t len, yaml_document_t *doc, dt_yamldoc_problem *why);

#endif
