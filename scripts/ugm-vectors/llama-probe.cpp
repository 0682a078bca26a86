// Asks llama.cpp, through its public C API, how it tokenizes and detokenizes inputs with one
// vocabulary-only GGUF. Built and run by generate.mjs (beside this file).
//
//   llama-probe VOCAB.gguf INPUTS.bin
//
// INPUTS.bin holds each input as a little-endian u32 byte length and the bytes. The first line
// printed is a JSON object with every token's piece (llama_token_to_piece, in hex) without and
// with special tokens rendered; then, for each input, one with the ids for three settings of
// llama_tokenize (add_special / parse_special: off/off, on/off, off/on) and, in hex,
// llama_detokenize of the first two id lists (remove_special and unparse_special off).
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static std::vector<llama_token> tokenize(const llama_vocab * vocab, const std::string & text, bool add_special, bool parse_special) {
    std::vector<llama_token> ids(text.size() * 2 + 8);
    int32_t n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(), add_special, parse_special);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(), add_special, parse_special);
    }
    ids.resize(n);
    return ids;
}

static std::string detokenize(const llama_vocab * vocab, const std::vector<llama_token> & ids) {
    std::string text(ids.size() * 16 + 16, '\0');
    int32_t n = llama_detokenize(vocab, ids.data(), (int32_t) ids.size(), text.data(), (int32_t) text.size(), false, false);
    if (n < 0) {
        text.resize(-n);
        n = llama_detokenize(vocab, ids.data(), (int32_t) ids.size(), text.data(), (int32_t) text.size(), false, false);
    }
    text.resize(n);
    return text;
}

static std::string piece(const llama_vocab * vocab, llama_token id, bool special) {
    std::string text(64, '\0');
    int32_t n = llama_token_to_piece(vocab, id, text.data(), (int32_t) text.size(), 0, special);
    if (n < 0) {
        text.resize(-n);
        n = llama_token_to_piece(vocab, id, text.data(), (int32_t) text.size(), 0, special);
    }
    text.resize(n);
    return text;
}

static void print_ids(const char * name, const std::vector<llama_token> & ids) {
    printf("\"%s\":[", name);
    for (size_t i = 0; i < ids.size(); i++) {
        printf(i ? ",%d" : "%d", ids[i]);
    }
    printf("]");
}

static void print_hex(const char * name, const std::string & s) {
    printf("\"%s\":\"", name);
    for (unsigned char c : s) {
        printf("%02x", c);
    }
    printf("\"");
}

int main(int argc, char ** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s VOCAB.gguf INPUTS.bin\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], params);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);

    for (int special = 0; special < 2; special++) {
        printf(special ? ",\"piecesSpecial\":[" : "{\"pieces\":[");
        for (llama_token id = 0; id < llama_vocab_n_tokens(vocab); id++) {
            std::string p = piece(vocab, id, special);
            printf(id ? ",\"" : "\"");
            for (unsigned char c : p) {
                printf("%02x", c);
            }
            printf("\"");
        }
        printf("]");
    }
    printf("}\n");

    std::ifstream in(argv[2], std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = 0; at + 4 <= data.size();) {
        uint32_t len = (uint8_t) data[at] | (uint8_t) data[at + 1] << 8 | (uint8_t) data[at + 2] << 16 | (uint32_t) (uint8_t) data[at + 3] << 24;
        std::string text = data.substr(at + 4, len);
        at += 4 + len;
        std::vector<llama_token> plain = tokenize(vocab, text, false, false);
        std::vector<llama_token> special = tokenize(vocab, text, true, false);
        std::vector<llama_token> parsed = tokenize(vocab, text, false, true);
        printf("{");
        print_ids("ids", plain);
        printf(",");
        print_ids("idsSpecial", special);
        printf(",");
        print_ids("idsParseSpecial", parsed);
        printf(",");
        print_hex("text", detokenize(vocab, plain));
        printf(",");
        print_hex("textSpecial", detokenize(vocab, special));
        printf("}\n");
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
