// Must NOT compile: backend_contract_ok.cpp's backend without pool3d.
#define SWINFER_FAILTEST_WITHOUT_POOL3D
#include "backend_contract_ok.cpp"
