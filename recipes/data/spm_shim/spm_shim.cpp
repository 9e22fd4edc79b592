// Placeholder until the tokenizer work fills the C API of the SentencePiece shim.
extern "C" int tb_spm_abi_version() { return 1; }
