/* The C API (include/ember.h) from C, on the shipped trained model: errors
 * reported, tokens and text both ways, the chat template, greedy answers that
 * repeat (the second from the prefix cache), requests from two threads at
 * once equal to each alone, stop strings, a prediction, cancellation. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static int failures = 0;
#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, " (last error: %s)\n", ember_last_error()); \
      ++failures;                                                \
    }                                                            \
  } while (0)

enum { kMaxTokens = 64, kMaxText = 4096 };

typedef struct {
  int32_t tokens[kMaxTokens];
  int64_t n_tokens;          /* those kept in `tokens` */
  int64_t generated;         /* all of them */
  char text[kMaxText];
  int64_t text_len;
  int reason;
  int updates;
  int64_t cached, kept, dropped;
} answer;

/* Drains a request into `a`; cancels it after its first update when asked. */
static void drain(ember_request* r, answer* a, int cancel_after_first) {
  memset(a, 0, sizeof *a);
  const ember_update* u;
  int rc;
  while ((rc = ember_request_next(r, &u)) == 1) {
    ++a->updates;
    a->generated += u->n_tokens;
    for (int64_t i = 0; i < u->n_tokens && a->n_tokens < kMaxTokens; ++i) a->tokens[a->n_tokens++] = u->tokens[i];
    if (a->text_len + u->text_len < kMaxText) {
      memcpy(a->text + a->text_len, u->text, (size_t)u->text_len);
      a->text_len += u->text_len;
    }
    if (u->finished) {
      a->reason = u->reason;
      a->cached = u->cached_tokens;
      a->kept = u->prediction_kept;
      a->dropped = u->prediction_dropped;
    }
    if (cancel_after_first && a->updates == 1) ember_request_cancel(r);
  }
  CHECK(rc == 0, "ember_request_next ended with %d", rc);
}

static ember_engine* engine;
static int32_t prompt[512];
static int64_t n_prompt;

static answer generate(const ember_generate_params* p) {
  answer a;
  ember_request* r = ember_generate(engine, p);
  CHECK(r != NULL, "ember_generate");
  if (r) {
    drain(r, &a, 0);
    ember_request_free(r);
  } else {
    memset(&a, 0, sizeof a);
  }
  return a;
}

static ember_generate_params greedy(int max_tokens) {
  ember_generate_params p;
  ember_generate_params_init(&p);
  p.prompt = prompt;
  p.n_prompt = n_prompt;
  p.max_tokens = max_tokens;
  return p;
}

static int same_tokens(const answer* a, const answer* b) {
  return a->n_tokens == b->n_tokens && memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n_tokens) == 0;
}

typedef struct {
  ember_generate_params p;
  answer a;
} job;

static void* run_job(void* arg) {
  job* j = (job*)arg;
  j->a = generate(&j->p);
  return NULL;
}

int main(void) {
  ember_engine_options o;
  ember_engine_options_init(&o);
  CHECK(ember_engine_load(&o) == NULL, "loading without a model must fail");
  CHECK(strstr(ember_last_error(), "model") != NULL, "the error names the missing model: %s", ember_last_error());
  o.model = "/nonexistent/model.gguf";
  CHECK(ember_engine_load(&o) == NULL, "loading a missing file must fail");
  CHECK(strstr(ember_last_error(), "/nonexistent/model.gguf") != NULL, "the error names the file");

  o.model = EMBER_SOURCE_DIR "/models/ember-doc-base-Q8_0.gguf";
  o.backend = "cpu";
  o.context = 512;
  o.parallel = 4;
  o.threads = 2;
  engine = ember_engine_load(&o);
  CHECK(engine != NULL, "loading the trained model");
  if (!engine) return 1;
  CHECK(ember_context_size(engine) == 512, "context %lld", (long long)ember_context_size(engine));
  CHECK(ember_vocab_size(engine) > 1000, "vocabulary %lld", (long long)ember_vocab_size(engine));

  /* Text to tokens and back; a buffer too small is told the length. */
  const char* hello = "Hello, world: the kernel's scheduler.";
  const int64_t need = ember_tokenize(engine, hello, strlen(hello), 0, NULL, 0);
  CHECK(need > 3, "token count %lld", (long long)need);
  int32_t ids[64];
  CHECK(ember_tokenize(engine, hello, strlen(hello), 0, ids, 64) == need, "the same count with room");
  char back[128];
  CHECK(ember_detokenize(engine, ids, need, back, sizeof back) == (int64_t)strlen(hello), "length back");
  CHECK(strcmp(back, hello) == 0, "round trip: '%s'", back);
  char small[5];
  CHECK(ember_detokenize(engine, ids, need, small, sizeof small) == (int64_t)strlen(hello), "the full length");
  CHECK(strlen(small) == 4 && strncmp(small, hello, 4) == 0, "cut and terminated: '%s'", small);
  const int32_t bad_id = (int32_t)ember_vocab_size(engine);
  CHECK(ember_detokenize(engine, &bad_id, 1, back, sizeof back) == -1, "an id outside the vocabulary");

  /* The chat template; malformed messages refused. */
  CHECK(ember_chat_prompt(engine, "[{\"role\": \"user\", \"content\": \"Hi\"}]", ids, 64) > 2, "a chat prompt");
  CHECK(ember_chat_prompt(engine, "[{\"role\": ", ids, 64) == -1, "malformed JSON");
  CHECK(strstr(ember_last_error(), "JSON") != NULL, "the error says JSON: %s", ember_last_error());
  CHECK(ember_chat_prompt(engine, "{}", ids, 64) == -1, "not an array");

  FILE* f = fopen(EMBER_SOURCE_DIR "/tests/data/trained/val-sample.txt", "rb");
  CHECK(f != NULL, "the sample text");
  if (!f) return 1;
  char passage[801];
  const size_t got = fread(passage, 1, 800, f);
  passage[got] = '\0';
  fclose(f);
  n_prompt = ember_tokenize(engine, passage, got, 1, prompt, 512);
  CHECK(n_prompt > 50 && n_prompt < 400, "prompt of %lld tokens", (long long)n_prompt);

  /* Greedy, twice: the same tokens, the second prompt from the prefix cache. */
  ember_generate_params p = greedy(48);
  const answer first = generate(&p);
  CHECK(first.n_tokens == 48 && first.reason == EMBER_FINISH_LENGTH, "%lld tokens, reason %d", (long long)first.n_tokens,
        first.reason);
  char decoded[kMaxText];
  ember_detokenize(engine, first.tokens, first.n_tokens, decoded, kMaxText);
  CHECK(first.text_len == (int64_t)strlen(decoded) && memcmp(first.text, decoded, (size_t)first.text_len) == 0,
        "the streamed text is the tokens' text");
  const answer again = generate(&p);
  CHECK(same_tokens(&first, &again), "a greedy answer repeats");
  CHECK(again.cached > 0, "the second prompt found in the prefix cache (%lld)", (long long)again.cached);

  /* Two threads at once, each answer equal to its own alone. */
  job jobs[2];
  jobs[0].p = greedy(48);
  jobs[1].p = greedy(32);
  jobs[1].p.n_prompt = n_prompt / 2;
  const answer half = generate(&jobs[1].p);
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) pthread_create(&th[i], NULL, run_job, &jobs[i]);
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  CHECK(same_tokens(&jobs[0].a, &first), "thread 0's answer");
  CHECK(same_tokens(&jobs[1].a, &half), "thread 1's answer");

  /* A stop string from the middle of the answer ends it just before. */
  char stop[8];
  memcpy(stop, first.text + first.text_len / 2, 6);
  stop[6] = '\0';
  const char* stops[1] = {stop};
  p.stop = stops;
  p.n_stop = 1;
  const answer stopped = generate(&p);
  CHECK(stopped.reason == EMBER_FINISH_STOP, "reason %d", stopped.reason);
  const char* at = strstr(first.text, stop);
  CHECK(at && stopped.text_len == (int64_t)(at - first.text) && memcmp(stopped.text, first.text, (size_t)stopped.text_len) == 0,
        "the text before the stop string ('%.*s')", (int)stopped.text_len, stopped.text);
  p.n_stop = 0;
  p.stop = NULL;

  /* The answer as its own prediction: the same tokens, most of them drafted and kept. */
  p.prediction = first.tokens;
  p.n_prediction = first.n_tokens;
  const answer predicted = generate(&p);
  CHECK(same_tokens(&predicted, &first), "a prediction changes no token");
  CHECK(predicted.kept > first.n_tokens / 2 && predicted.dropped == 0, "kept %lld, dropped %lld", (long long)predicted.kept,
        (long long)predicted.dropped);
  p.prediction = NULL;
  p.n_prediction = 0;

  /* Cancelled after its first update. */
  ember_generate_params longer = greedy(400);
  ember_request* r = ember_generate(engine, &longer);
  answer cancelled;
  drain(r, &cancelled, 1);
  ember_request_free(r);
  CHECK(cancelled.reason == EMBER_FINISH_CANCELLED && cancelled.generated < 400, "reason %d after %lld tokens",
        cancelled.reason, (long long)cancelled.generated);

  /* Bad requests are refused at once. */
  ember_generate_params bad = greedy(8);
  bad.n_prompt = 0;
  CHECK(ember_generate(engine, &bad) == NULL, "an empty prompt");
  bad = greedy(8);
  bad.prompt = &bad_id;
  bad.n_prompt = 1;
  CHECK(ember_generate(engine, &bad) == NULL, "an id outside the vocabulary");
  CHECK(strstr(ember_last_error(), "vocabulary") != NULL, "the error says why: %s", ember_last_error());
  bad = greedy(8);
  bad.temperature = -1.0f;
  CHECK(ember_generate(engine, &bad) == NULL, "a negative temperature");
  bad = greedy(-1);
  CHECK(ember_generate(engine, &bad) == NULL, "a negative max_tokens");
  ember_generate_params uninitialised;
  memset(&uninitialised, 0, sizeof uninitialised);
  uninitialised.prompt = prompt;
  uninitialised.n_prompt = n_prompt;
  CHECK(ember_generate(engine, &uninitialised) == NULL, "parameters not set up by their init function");
  CHECK(strstr(ember_last_error(), "ember_generate_params_init") != NULL, "the error names the init: %s", ember_last_error());
  CHECK(ember_api_version() == EMBER_API_VERSION, "the library's version %d", ember_api_version());

  ember_engine_free(engine);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("all C API checks passed\n");
  return failures ? 1 : 0;
}
