// Must NOT compile: the twin of onednn_int8_ok.cpp with fp16, which the onednn backend does not implement; the
// model's static_assert names the problem.
#include <swinfer/backend/onednn.hpp>
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::onednn, swinfer::precision::fp16>) > 0 ? 0 : 1; }
