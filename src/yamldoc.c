/* yamldoc.c — one YAML document from an input's text (see yamldoc.h).
 *
 * The parser's events are composed into a yaml_document_t on a stack of
 * open collections at most DT_INPUT_MAX_DEPTH high; each node keeps its
 * event's marks. When a mapping ends its scalar keys are sorted (by text,
 * then by place) so a key written twice is found in O(k log k), and the
 * earliest second occurrence in the file is the one reported.
 */
#include "yamldoc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

typedef struct open_node {
    int id;          /* the collection's node */
    int key;         /* a mapping's key waiting for its value; 0 = none */
} open_node;

typedef struct composer {
    yaml_document_t *doc;
    open_node stack[DT_INPUT_MAX_DEPTH];
    int depth;
    dt_yamldoc_problem *why;
} composer;

static int problem(dt_yamldoc_problem *why, int code, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int problem(dt_yamldoc_problem *why, int code, yaml_mark_t mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->msg, sizeof why->msg, fmt, ap);
    va_end(ap);
    why->code = code;
    why->mark = mark;
    return code;
}

/* libyaml's reader (bad encoding) gives a byte offset, not a mark: count
 * lines and UTF-8 characters up to it. */
static yaml_mark_t mark_of_offset(const char *text, size_t len, size_t offset)
{
    yaml_mark_t m = { offset, 0, 0 };
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n')
            m.line++, m.column = 0;
        else if ((text[i] & 0xC0) != 0x80)
            m.column++;
    }
    return m;
}

static int syntax_error(const yaml_parser_t *p, const char *text, size_t len, dt_yamldoc_problem *why)
{
    const char *what = p->problem ? p->problem : "cannot be read";
    if (p->error == YAML_MEMORY_ERROR)
        return problem(why, DT_ENOMEM, p->problem_mark, "out of memory");
    if (p->error == YAML_READER_ERROR)
        return problem(why, DT_EPARSE, mark_of_offset(text, len, p->problem_offset),
                       "not YAML text: %s at byte %zu", what, p->problem_offset);
    if (p->problem_mark.index < len && text[p->problem_mark.index] == '\t')
        return problem(why, DT_EPARSE, p->problem_mark, "YAML syntax error: a tab; YAML indents with "
                       "spaces only (%s)", what);
    if (p->context)
        return problem(why, DT_EPARSE, p->problem_mark, "YAML syntax error: %s (%s at %zu:%zu)", what,
                       p->context, p->context_mark.line + 1, p->context_mark.column + 1);
    return problem(why, DT_EPARSE, p->problem_mark, "YAML syntax error: %s", what);
}

static yaml_node_t *node_of(composer *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

/* Links node id under the innermost open collection (the first node is the root). */
static int attach(composer *c, int id, const yaml_event_t *ev)
{
    yaml_node_t *node = node_of(c, id);
    node->start_mark = ev->start_mark;
    node->end_mark = ev->end_mark;
    if (c->depth == 0)
        return 0;
    open_node *parent = &c->stack[c->depth - 1];
    int ok;
    if (node_of(c, parent->id)->type == YAML_SEQUENCE_NODE) {
        ok = yaml_document_append_sequence_item(c->doc, parent->id, id);
    } else if (!parent->key) {
        parent->key = id;
        ok = 1;
    } else {
        ok = yaml_document_append_mapping_pair(c->doc, parent->id, parent->key, id);
        parent->key = 0;
    }
    return ok ? 0 : problem(c->why, DT_ENOMEM, ev->start_mark, "out of memory");
}

typedef struct key_ref {
    const yaml_node_t *node;
    size_t order;
} key_ref;

static int key_order(const void *pa, const void *pb)
{
    const key_ref *a = pa, *b = pb;
    size_t la = a->node->data.scalar.length, lb = b->node->data.scalar.length;
    int by_text = memcmp(a->node->data.scalar.value, b->node->data.scalar.value, la < lb ? la : lb);
    if (by_text)
        return by_text;
    if (la != lb)
        return la < lb ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* A key written twice in map: the earliest second occurrence, named with its first. */
static int check_duplicates(composer *c, const yaml_node_t *map)
{
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start), k = 0;
    if (n < 2)
        return 0;
    key_ref *keys = malloc(n * sizeof *keys);
    if (!keys)
        return problem(c->why, DT_ENOMEM, map->start_mark, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *key = node_of(c, map->data.mapping.pairs.start[i].key);
        if (key->type == YAML_SCALAR_NODE)
            keys[k++] = (key_ref){ key, i };
    }
    qsort(keys, k, sizeof *keys, key_order);
    const key_ref *twin = NULL, *first = NULL;
    for (size_t i = 1, g = 0; i < k; i++) {
        if (key_order(&(key_ref){ keys[i].node, 0 }, &(key_ref){ keys[g].node, 0 }) != 0) {
            g = i;          /* a new text starts its group at its first occurrence */
            continue;
        }
        if (!twin || keys[i].order < twin->order)
            twin = &keys[i], first = &keys[g];
    }
    int rc = 0;
    if (twin)
        rc = problem(c->why, DT_EINVAL, twin->node->start_mark, "duplicate key '%s' (first at %zu:%zu)",
                     (const char *)twin->node->data.scalar.value, first->node->start_mark.line + 1,
                     first->node->start_mark.column + 1);
    free(keys);
    return rc;
}

static int open_collection(composer *c, const yaml_event_t *ev)
{
    if (c->depth == DT_INPUT_MAX_DEPTH)
        return problem(c->why, DT_EPARSE, ev->start_mark,
                       "collections nested deeper than %d levels", DT_INPUT_MAX_DEPTH);
    int id;
    if (ev->type == YAML_SEQUENCE_START_EVENT)
        id = yaml_document_add_sequence(c->doc, ev->data.sequence_start.tag,
                                        ev->data.sequence_start.style);
    else
        id = yaml_document_add_mapping(c->doc, ev->data.mapping_start.tag,
                                       ev->data.mapping_start.style);
    if (!id)
        return problem(c->why, DT_EPARSE, ev->start_mark, "a collection tag that is not UTF-8");
    int rc = attach(c, id, ev);
    if (rc == 0)
        c->stack[c->depth++] = (open_node){ id, 0 };
    return rc;
}

static int close_collection(composer *c, const yaml_event_t *ev)
{
    const yaml_node_t *node = node_of(c, c->stack[--c->depth].id);
    node_of(c, c->stack[c->depth].id)->end_mark = ev->end_mark;
    return node->type == YAML_MAPPING_NODE ? check_duplicates(c, node) : 0;
}

static int add_scalar(composer *c, const yaml_event_t *ev)
{
    int id = yaml_document_add_scalar(c->doc, ev->data.scalar.tag, ev->data.scalar.value,
                                      (int)ev->data.scalar.length, ev->data.scalar.style);
    if (!id)
        return problem(c->why, DT_EPARSE, ev->start_mark, "a scalar that is not UTF-8");
    return attach(c, id, ev);
}

static const yaml_char_t *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT: return ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT: return ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT: return ev->data.mapping_start.anchor;
    default: return NULL;
    }
}

/* One event of the document's body; *done once it ends. */
static int compose(composer *c, const yaml_event_t *ev, bool *done)
{
    if (ev->type == YAML_ALIAS_EVENT || anchor_of(ev))
        return problem(c->why, DT_EINVAL, ev->start_mark, "%s '%s': anchors and aliases are not "
                       "supported; write the value out", ev->type == YAML_ALIAS_EVENT ? "alias" : "anchor",
                       (const char *)(ev->type == YAML_ALIAS_EVENT ? ev->data.alias.anchor : anchor_of(ev)));
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return add_scalar(c, ev);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        return open_collection(c, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return close_collection(c, ev);
    case YAML_DOCUMENT_END_EVENT:
        c->doc->end_mark = ev->end_mark;
        *done = true;
        return 0;
    default:
        return problem(c->why, DT_EPARSE, ev->start_mark, "unexpected YAML event %d", (int)ev->type);
    }
}

/* Pulls one event; 0 or the syntax error. */
static int next_event(yaml_parser_t *p, yaml_event_t *ev, const char *text, size_t len,
                      dt_yamldoc_problem *why)
{
    return yaml_parser_parse(p, ev) ? 0 : syntax_error(p, text, len, why);
}

/* Everything after the stream's start: nothing, or one document and the end. */
static int read_stream(yaml_parser_t *p, const char *text, size_t len, yaml_document_t *doc,
                       dt_yamldoc_problem *why)
{
    yaml_event_t ev;
    int rc = next_event(p, &ev, text, len, why);
    if (rc)
        return rc;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        return yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1) ? 0
               : problem(why, DT_ENOMEM, ev.start_mark, "out of memory");
    }
    if (!yaml_document_initialize(doc, ev.data.document_start.version_directive,
                                  ev.data.document_start.tag_directives.start,
                                  ev.data.document_start.tag_directives.end,
                                  ev.data.document_start.implicit, 1)) {
        yaml_event_delete(&ev);
        return problem(why, DT_ENOMEM, ev.start_mark, "out of memory");
    }
    doc->start_mark = ev.start_mark;
    yaml_event_delete(&ev);
    composer c = { .doc = doc, .why = why };
    bool done = false;
    while (rc == 0 && !done && (rc = next_event(p, &ev, text, len, why)) == 0) {
        rc = compose(&c, &ev, &done);
        yaml_event_delete(&ev);
    }
    if (rc == 0 && (rc = next_event(p, &ev, text, len, why)) == 0) {
        if (ev.type != YAML_STREAM_END_EVENT)
            rc = problem(why, DT_EINVAL, ev.start_mark,
                         "a second YAML document; the file must be one document (remove the '---')");
        yaml_event_delete(&ev);
    }
    if (rc)
        yaml_document_delete(doc);
    return rc;
}

int dt_yamldoc_load(const char *text, size_t len, yaml_document_t *doc, dt_yamldoc_problem *why)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    yaml_mark_t start = { 0, 0, 0 };
    memset(doc, 0, sizeof *doc);
    if (!yaml_parser_initialize(&parser))
        return problem(why, DT_ENOMEM, start, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = next_event(&parser, &ev, text, len, why);
    if (rc == 0) {
        yaml_event_delete(&ev);      /* the stream's start */
        rc = read_stream(&parser, text, len, doc, why);
    }
    yaml_parser_delete(&parser);
    return rc;
}
