// Must compile: the onednn backend implements int8 (its convolutions on oneDNN's s8 convolution).
#include <swinfer/backend/onednn.hpp>
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::onednn, swinfer::precision::int8>) > 0 ? 0 : 1; }
