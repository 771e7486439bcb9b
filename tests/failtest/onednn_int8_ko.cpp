// Must NOT compile: the onednn backend has no int8 kernels yet (the cpu backend has); the static_assert names the
// problem.
#include <swinfer/backend/onednn.hpp>
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::onednn, swinfer::precision::int8>) > 0 ? 0 : 1; }
