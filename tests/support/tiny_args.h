// The small architecture the memory tests count by hand: dim 64, 2 layers, 4 heads (head_dim 16), 2 kv heads
// (kv dim 32), hidden 128, vocabulary 512, untied. Per layer q 64*64 + k 64*32 + v 64*32 + o 64*64 = 12288,
// MLP 3*64*128 = 24576, two norms 128 -> 36992; two layers 73984; embedding 32768 + output 32768 + final
// norm 64: 139584 parameters.
#pragma once

#include <cstdint>

#include "models/model_args.h"

namespace tbtest {

constexpr int64_t kTinyArgsParams = 139584;

inline tb::models::ModelArgs tiny_args() {
  tb::models::ModelArgs a;
  a.vocab_size = 512;
  a.num_layers = 2;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.embed_dim = 64;
  a.intermediate_dim = 128;
  a.max_seq_len = 128;
  a.tie_word_embeddings = false;
  return a;
}

}  // namespace tbtest
