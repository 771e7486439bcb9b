// Must compile: the twin of onednn_int8_ko.cpp on the cpu backend, which implements int8.
#include <swinfer/backend/onednn.hpp>
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::cpu, swinfer::precision::int8>) > 0 ? 0 : 1; }
