// SPDX-License-Identifier: Apache-2.0
/* What every user of the settings table asks of a row (settings.h). */
#include "base/settings.h"

#include <stdio.h>
#include <string.h>

const char *tq_setting_kind_name(tq_setting_kind k)
{
    static const char *const names[] = {"choice", "ms", "count", "bytes", "bool", "limit"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const char *tq_setting_word(const tq_setting *s, long long v)
{
    if (s->kind != TQ_SET_CHOICE || v < 0) return NULL;
    for (long long i = 0; s->words[i]; i++)
        if (i == v) return s->words[i];
    return NULL;
}

int tq_setting_word_index(const tq_setting *s, const char *word)
{
    if (s->kind != TQ_SET_CHOICE || !word) return -1;
    for (int i = 0; s->words[i]; i++)
        if (!strcmp(s->words[i], word)) return i;
    return -1;
}

void tq_setting_words_text(const tq_setting *s, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; s->kind == TQ_SET_CHOICE && s->words[i] && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "|" : "", s->words[i]);
}

bool tq_setting_in_range(const tq_setting *s, long long v)
{
    if (s->kind == TQ_SET_LIMIT && v == TQ_UNLIMITED) return true;
    return v >= s->min && v <= s->max;
}

void tq_setting_range_text(const tq_setting *s, char *buf, size_t len)
{
    switch (s->kind) {
    case TQ_SET_CHOICE: {
        size_t at = (size_t)snprintf(buf, len, "%s must be ", s->name);
        for (int i = 0; s->words[i] && at < len; i++)
            at += (size_t)snprintf(buf + at, len - at, "%s\"%s\"",
                                   !i                ? ""
                                   : s->words[i + 1] ? ", "
                                                     : " or ",
                                   s->words[i]);
        break;
    }
    case TQ_SET_BOOL: snprintf(buf, len, "%s must be true or false", s->name); break;
    case TQ_SET_LIMIT:
        snprintf(buf, len, "%s must be a number from %lld to %lld, or null (unlimited)", s->name,
                 s->min, s->max);
        break;
    default: snprintf(buf, len, "%s must be a number from %lld to %lld", s->name, s->min, s->max);
    }
}
