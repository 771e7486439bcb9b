// Must NOT compile: int8 has its traits but no backend implements it; the static_assert names the problem.
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::cpu, swinfer::precision::int8>) > 0 ? 0 : 1; }
