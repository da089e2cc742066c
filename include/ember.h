/* ember's C API: load a model, turn text into tokens and back, apply its chat
 * template, and generate, many requests at once (continuous batching, the
 * prefix cache and speculative decoding, as `ember serve` runs them).
 *
 *   ember_engine_options o;
 *   ember_engine_options_init(&o);
 *   o.model = "model.gguf";
 *   ember_engine* e = ember_engine_load(&o);            // NULL: see ember_last_error()
 *   int32_t prompt[4096];
 *   int64_t n = ember_chat_prompt(e, "[{\"role\": \"user\", \"content\": \"Hi\"}]", prompt, 4096);
 *   if (n < 0 || n > 4096) ...;                        // an error, or longer than the buffer
 *   ember_generate_params p;
 *   ember_generate_params_init(&p);
 *   p.prompt = prompt;
 *   p.n_prompt = n;
 *   ember_request* r = ember_generate(e, &p);
 *   const ember_update* u;
 *   while (ember_request_next(r, &u) == 1) fwrite(u->text, 1, (size_t)u->text_len, stdout);
 *   ember_request_free(r);
 *   ember_engine_free(e);
 *
 * Functions may be called from any thread; requests run together in one
 * engine thread. One thread at a time calls into a given request, and a
 * request is freed before its engine. A function that fails returns NULL or
 * -1 and leaves a message for ember_last_error() on the calling thread. Link
 * with -lember (libember.so).
 *
 * Structs the caller fills start with their size, set by their _init
 * function (which every caller must call first): a library of a later
 * version, whose structs have more fields at their end, reads only what the
 * caller's holds. Updates are the library's own, read through a pointer.
 */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif

#define EMBER_API_VERSION 1

/* The library's EMBER_API_VERSION (a program built against another header may check it). */
EMBER_API int ember_api_version(void);

typedef struct ember_engine ember_engine;
typedef struct ember_request ember_request;

/* The calling thread's last error message ("" when none). Valid until its next call into ember. */
EMBER_API const char* ember_last_error(void);

/* ---- Loading ---------------------------------------------------------- */

typedef struct {
  size_t size;             /* sizeof(ember_engine_options), set by ember_engine_options_init */
  const char* model;       /* a GGUF file or a Hugging Face model folder (required) */
  const char* backend;     /* "cpu", "cuda" or "auto" (the GPU where there is one); NULL: "auto" */
  int64_t context;         /* tokens a conversation may hold; 0: the model's, at most 4,096 */
  int parallel;            /* requests generating at once (more wait their turn); 0: 1 */
  int threads;             /* CPU threads; 0: all */
  const char* kv_mem;      /* KV cache bytes, e.g. "2G"; NULL: `parallel` full contexts */
  int draft_tokens;        /* speculative decoding by n-gram lookup: up to this many tokens a step; 0: off */
  int prediction_tokens;   /* drafts from a request's prediction: up to this many a step; 0: predictions not used */
} ember_engine_options;

/* The size and the defaults of every field (model NULL). */
EMBER_API void ember_engine_options_init(ember_engine_options* o);
EMBER_API ember_engine* ember_engine_load(const ember_engine_options* o);
/* Frees the model and the engine; every request must have been freed first. */
EMBER_API void ember_engine_free(ember_engine* e);

/* Ids the model has (its tokenizer may name fewer: generation only ever picks those). */
EMBER_API int64_t ember_vocab_size(const ember_engine* e);
EMBER_API int64_t ember_context_size(const ember_engine* e);

/* ---- Tokens ------------------------------------------------------------ */

/* Text to token ids. With add_special, the model's beginning-of-text token
 * is added and special tokens written in the text are parsed as such. Writes
 * at most `cap` ids; returns how many the text has (call again with more room
 * when it exceeds cap), or -1. */
EMBER_API int64_t ember_tokenize(ember_engine* e, const char* text, size_t len, int add_special, int32_t* out, int64_t cap);
/* Token ids to text (special tokens skipped). Writes at most `cap` bytes and a
 * terminating NUL where there is room; returns the text's length, or -1. */
EMBER_API int64_t ember_detokenize(ember_engine* e, const int32_t* ids, int64_t n, char* out, int64_t cap);
/* A conversation through the model's chat template, ready to generate the
 * assistant's answer: `messages_json` is a JSON array of {"role", "content"}
 * objects (roles system, user, assistant, tool). Special tokens come only from
 * the template, never from message text. Returns the prompt's length as
 * ember_tokenize does, or -1 (no template, malformed JSON). */
EMBER_API int64_t ember_chat_prompt(ember_engine* e, const char* messages_json, int32_t* out, int64_t cap);

/* ---- Generating -------------------------------------------------------- */

typedef struct {
  size_t size;               /* sizeof(ember_generate_params), set by ember_generate_params_init */
  const int32_t* prompt;     /* token ids, fed as they are (required) */
  int64_t n_prompt;
  int max_tokens;            /* new tokens at most (the context may end it earlier); 256 after init */
  float temperature;         /* 0: greedy */
  int top_k;                 /* 0: off */
  float top_p;               /* 1: off */
  float min_p;               /* 0: off */
  uint64_t seed;             /* a sampled answer is a function of its seed */
  const char* const* stop;   /* strings that end the answer (not included in its text) */
  int n_stop;
  const int32_t* prediction; /* optional: the answer expected (e.g. a file an edit returns mostly unchanged), */
  int64_t n_prediction;      /* drafted from: the answer is the model's own, faster where it follows this */
} ember_generate_params;

/* The size and the defaults: greedy, 256 tokens, no stop strings, no prediction. */
EMBER_API void ember_generate_params_init(ember_generate_params* p);
/* Starts a request (it is copied: the caller's arrays may go at once). NULL on bad parameters. */
EMBER_API ember_request* ember_generate(ember_engine* e, const ember_generate_params* p);

typedef enum {
  EMBER_FINISH_NONE = 0,      /* still generating */
  EMBER_FINISH_STOP = 1,      /* an end-of-text token or a stop string */
  EMBER_FINISH_LENGTH = 2,    /* max_tokens, or the context is full */
  EMBER_FINISH_CANCELLED = 3,
  EMBER_FINISH_ERROR = 4,     /* `error` says why */
} ember_finish_reason;

typedef struct {
  const int32_t* tokens;     /* the new tokens since the last update */
  int64_t n_tokens;
  const char* text;          /* their text (NUL-terminated; held back while it may still become a stop string) */
  int64_t text_len;
  int finished;              /* 1 on the request's last update */
  int reason;                /* ember_finish_reason, with finished */
  const char* error;         /* with EMBER_FINISH_ERROR; else "" */
  int64_t prompt_tokens;     /* with finished: the prompt's tokens, and those found in the prefix cache */
  int64_t cached_tokens;
  int64_t prediction_kept;   /* with finished and a prediction: its drafted tokens the answer took, and did not */
  int64_t prediction_dropped;
} ember_update;

/* Waits for what is new. Returns 1 and points *u at the update (it and its
 * pointers valid until the next call on this request), 0 once the last update
 * has been taken, -1 on error. */
EMBER_API int ember_request_next(ember_request* r, const ember_update** u);
/* Stops the request; ember_request_next then ends with EMBER_FINISH_CANCELLED. */
EMBER_API void ember_request_cancel(ember_request* r);
/* Frees the request (cancelling it if it still runs). */
EMBER_API void ember_request_free(ember_request* r);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_H */
