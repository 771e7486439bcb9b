// Prints the CPU's register-only arithmetic ceiling (bench/peak.hpp) per instruction on 1, 2, 4 ... threads:
// what "near peak" means on the machine at hand.
//   usage: bench_peak [threads] [seconds per measurement]     (threads 0 = one per hardware thread)
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "peak.hpp"
#include "swinfer/backend/cpu/cpu_features.hpp"

namespace {

using namespace swinfer_bench::peak;

template <class I>
void row(int threads, double seconds) {
  std::printf("%-34s", I::name);
  for (int t = 1; t <= threads; t *= 2) std::printf(" %12.1f", rate<I>(t, seconds));
  if ((threads & (threads - 1)) != 0) std::printf(" %12.1f", rate<I>(threads, seconds));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int requested = argc > 1 ? std::atoi(argv[1]) : 0;
  const int threads = requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.3;
  std::printf("register-only peak, %s, best of 3 x %.2f s; giga-operations per second (multiply + add = 2)\n",
              swinfer::cpu::host_cpu().describe().c_str(), seconds);
  std::printf("%-34s", "instruction / threads");
  for (int t = 1; t <= threads; t *= 2) std::printf(" %12d", t);
  if ((threads & (threads - 1)) != 0) std::printf(" %12d", threads);
  std::printf("\n");
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  row<fp32_fma>(threads, seconds);
#else
  std::printf("fp32 FMA: this build targets no FMA instruction set (build with -march=native)\n");
#endif
#if defined(__AVX512BF16__)
  row<bf16_dot>(threads, seconds);
#else
  std::printf("bf16 pair dot: not in this build's target (AVX512_BF16)\n");
#endif
#if defined(__AVX512VNNI__)
  row<int8_dot>(threads, seconds);
#else
  std::printf("u8 x s8 quad dot: not in this build's target (AVX512_VNNI)\n");
#endif
#if defined(__AVX512BW__) || defined(__AVX2__)
  row<int8_madd>(threads, seconds);
#else
  std::printf("int16 pair madd: not in this build's target (AVX2)\n");
#endif
  return 0;
}
