// The one Catch2 main of the test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "tensor_testing.hpp"

std::mt19937_64& swinfer_test::rng() {
  static std::mt19937_64 generator(Catch::rngSeed());
  return generator;
}
