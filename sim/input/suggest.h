/* "Did you mean" for misspelt names: keys, enum values, units, catalog entries.
 *
 * Distance is the optimal-string-alignment variant of Damerau-Levenshtein (insertions,
 * deletions, substitutions and transpositions of adjacent characters each cost 1), computed
 * case-sensitively; a candidate that differs only in case costs 1 so that `gib` suggests
 * `GiB`. A suggestion is offered only when the best distance is small relative to the
 * length of the word (at most 1 for words up to 4 characters, 2 up to 8, 3 beyond). */
#ifndef SIM_INPUT_SUGGEST_H
#define SIM_INPUT_SUGGEST_H

#include <stddef.h>

/* Edit distance between a and b (see above). Strings longer than 63 characters are compared
 * on their first 63. Cannot fail. */
int input_edit_distance(const char *a, const char *b);

/* The closest of the n candidates to `word`, or NULL when none is close enough. Ties go to
 * the earliest candidate. Returns one of the candidate pointers (not a copy). Cannot fail. */
const char *input_suggest(const char *word, const char *const *candidates, size_t n);

/* A training framework's name for a stepsim key (Hugging Face, DeepSpeed, FSDP/Accelerate,
 * torchtitan, Megatron-LM): for `name` (case and '-'/'_' aside), the stepsim key it means and
 * how, e.g. "gradient_checkpointing" -> "training.recompute: full (Hugging Face's
 * gradient_checkpointing)"; NULL when the name is none of theirs. Static string. */
const char *input_framework_alias(const char *name);

#endif
