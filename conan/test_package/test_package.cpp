#include <swinfer/swinfer.hpp>

int main() { return swinfer::parameter_count(swinfer::swin_unetr_config{}) > 0 ? 0 : 1; }
