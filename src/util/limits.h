// The limits ember enforces on untrusted input (model files, tokenizer files,
// chat templates, JSON, command-line flags), in one place. docs/limits.md lists
// them with the largest value seen in real models and how to raise them: a
// limit here is raised by editing its constant and rebuilding.
//
// Every limit is far above what real models need (the margin is stated per
// limit) and low enough that a value just under it cannot make ember allocate
// more than a few hundred megabytes before the bytes of the file justify it.
#pragma once
#include <cstdint>

namespace ember::limits {

// --- model hyperparameters (largest real value in the comment) ---
inline constexpr int64_t kMaxLayers = 1024;           // 126 (Llama 3.1 405B)
inline constexpr int64_t kMaxHidden = 65536;          // 16384 (Llama 3.1 405B)
inline constexpr int64_t kMaxHeads = 1024;            // 128
inline constexpr int64_t kMaxHeadDim = 1024;          // 256 (Gemma 2/3)
inline constexpr int64_t kMaxFfn = int64_t(1) << 20;  // 53248 (Llama 3.1 405B)
inline constexpr int64_t kMaxVocab = int64_t(1) << 21;  // 262144 (Gemma 3)
inline constexpr int64_t kMaxContext = int64_t(1) << 24;  // 10M (Llama 4 Scout)
inline constexpr int64_t kMaxExperts = 1024;          // 384 (Kimi K2)
// Largest width of one projection (heads x head size); keeps every product of
// a dimension by a row count within 32-bit int arithmetic.
inline constexpr int64_t kMaxProjection = int64_t(1) << 18;

// --- files and parsers ---
inline constexpr int kMaxJsonDepth = 128;                        // real files: < 10
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t(1) << 30;  // tokenizer.json of 262k tokens: ~33 MB
// Gemma 3: ~790k (tokens, scores, types). A file under ~24 MB gets fewer: 32 MB
// of parsed values plus 16 bytes per byte of file (gguf/reader.cpp).
inline constexpr uint64_t kMaxGgufMetadataValues = uint64_t(1) << 22;
inline constexpr uint64_t kMaxTokenBytes = 65536;  // one vocabulary entry; real: < 1 KB
// One added (special or user-defined) token; real: < 40 bytes (runs of spaces in
// code models: < 32). It bounds the automaton's look-ahead past a block of input.
inline constexpr uint64_t kMaxAddedTokenBytes = 256;

// --- run time ---
inline constexpr int kThreadsPerCore = 4;  // --threads up to this many per hardware thread
inline constexpr int kMaxThreadsFloor = 64;  // ... and never fewer than this may be asked for

}  // namespace ember::limits
