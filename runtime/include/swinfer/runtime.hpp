// swinfer::runtime: a network for a backend and precision named at run time (make_network), and the cpu kernel
// levels compiled into the library (cpu_levels.hpp). Link the swinfer::runtime target; the header-only templates
// (swinfer/swinfer.hpp) build a network for a backend fixed at compile time instead.
#pragma once

#include <swinfer/runtime/backends.hpp>
#include <swinfer/runtime/cpu_levels.hpp>
