// swinfer hip backend: the interface of the compiled library (swinfer::hip). Plain C++ with standard types only,
// so both sides can include it: host code built with g++ (the backend headers, tests, the model) and the GPU
// translation units in backends/hip/src/ built with nvcc or HIP clang. Pointers named `d_...` or documented as
// device pointers point to GPU memory; the host never dereferences them.
//
// Every launch_... function enqueues its kernels on `env.stream` and returns without synchronising; it checks
// that the launch was accepted and throws swinfer::error otherwise.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace swinfer::hip {

/// Element type of a device tensor (the storage types of fp32, fp16 and bf16: IEEE binary32, binary16, bfloat16).
enum class dtype : std::uint8_t { f32, f16, bf16 };

inline constexpr std::size_t dtype_size(dtype t) { return t == dtype::f32 ? 4 : 2; }

/// Logical (N, C, D, H, W) extents and element strides in that order: any layout, as in swinfer::tensor_view.
struct strided5 {
  std::array<std::int64_t, 5> shape{};
  std::array<std::int64_t, 5> stride{};
  std::int64_t numel() const { return shape[0] * shape[1] * shape[2] * shape[3] * shape[4]; }
};

/// What the properties of the selected device say; warp_size is 64 on CDNA and 32 on NVIDIA.
struct device_properties {
  int index = -1;
  std::string name;
  std::string arch;  ///< "gfx942..." on AMD, "sm_90" on NVIDIA
  std::string platform;  ///< "amd" or "nvidia": what the library was compiled for
  int warp_size = 0;
  int multiprocessors = 0;  ///< SMs (NVIDIA) or CUs (AMD)
  std::size_t shared_memory_per_block = 0;
  std::size_t max_shared_memory_per_block = 0;  ///< what one block may use with dynamic shared memory (opt-in)
  std::size_t global_memory = 0;
  /// Whether fp16/bf16 GEMMs and convolutions run on the matrix cores, and why (not) in words.
  bool matrix_cores = false;
  std::string matrix_cores_note;
  /// Whether 3x3x3 convolutions run on Hopper's warpgroup products (kernels.conv = wgmma: sm_90a code on an
  /// sm_90 GPU, checked at start-up against the halo tile), and why (not) in words.
  bool warpgroup_mma = false;
  std::string warpgroup_mma_note;
};

/// Which kernel runs a convolution where several can (backend_options<hip>::kernels; the tool's SWINFER_GPU_CONV:
/// auto, halo, gemm, wgmma, direct): by the
/// shape (direct FMA for inputs of up to 4 channels; for 3x3x3 the halo tile where there are boxes enough to fill
/// the device, the tiled GEMM with split K below that), or always the one named where it can run (for A/B timings,
/// and so the tests reach the box kernels with small volumes on a large GPU). wgmma, Hopper's warpgroup products,
/// runs only when named, until a GPU session shows it faster than the halo tile (docs/gpu.md); on a device without
/// them the halo tile runs instead.
enum class conv_kernel_choice { automatic, halo, gemm, wgmma, direct };

/// Which kernel runs the window attention's core (softmax(q k^T + bias) v) in fp16/bf16 (the tool's
/// SWINFER_GPU_ATTENTION: auto, fma, mma): automatic is float32 FMA, which ran faster than the matrix-core kernel on an H100 and an H200
/// (docs/gpu.md); mma where the device has matrix cores and the head dim fits, else FMA.
enum class attention_kernel_choice { automatic, fma, mma };

/// The kernels chosen where several can run an op (backend_options<hip>::kernels).
struct kernel_choices {
  conv_kernel_choice conv = conv_kernel_choice::automatic;
  attention_kernel_choice attention = attention_kernel_choice::automatic;
};

/// Where kernels run: the stream (an opaque cudaStream_t / hipStream_t) and the device facts launch geometry
/// depends on.
struct launch_env {
  void* stream = nullptr;
  int warp_size = 32;
  int multiprocessors = 1;
  bool matrix_cores = false;  ///< 16-bit GEMMs on mma (NVIDIA) / MFMA (AMD)
  kernel_choices kernels;
  std::size_t max_shared_per_block = 48 * 1024;  ///< device_properties::max_shared_memory_per_block
  bool warpgroup_mma = false;  ///< 3x3x3 convolutions on wgmma (device_properties::warpgroup_mma)
};

// ---- Runtime (src/runtime.cu) -------------------------------------------------------------------------------

/// "nvidia" or "amd": the platform the library was compiled for.
const char* platform();
/// Number of usable devices; 0 (never an exception) when there is no device, no driver or no runtime. `why`
/// receives the runtime's reason when the count is 0.
int device_count(std::string* why = nullptr);
device_properties query_device(int index);
void set_device(int index);
/// Launches a one-thread kernel on `stream` and waits: false (with the runtime's reason) when this build has no
/// code for the device's architecture or the device cannot run kernels.
bool probe_kernels(void* stream, std::string* why);
/// Whether the device has matrix cores our kernels drive: NVIDIA sm_80 and newer, AMD CDNA2/3 (gfx90a, gfx94x),
/// the emulator; otherwise false with the reason.
bool matrix_cores_supported(const device_properties& device, std::string* why);
/// Whether the device runs this build's warpgroup products (vendor/warpgroup_mma.hpp): an sm_90 GPU that ran the
/// build's sm_90a code (a probe kernel on `stream` says which code ran), or the emulator with 32-lane warps;
/// otherwise false with the reason.
bool warpgroup_mma_supported(const device_properties& device, void* stream, std::string* why);

/// The process's stream for `device` (created on first use, never destroyed): every context of the device enqueues
/// on it, so device memory can be allocated and freed in stream order without knowing which context used it.
void* device_stream(int device);
/// Device memory on the current device. Where the device supports stream-ordered allocation, it comes from the
/// device's memory pool in the order of device_stream (freed memory is reused by later work without any
/// synchronisation, and kept cached); otherwise from cudaMalloc/hipMalloc, whose free waits for the device.
void* device_alloc(std::size_t bytes);
void device_free(void* d_ptr) noexcept;
/// Bytes of device memory swinfer holds on a device (what device_alloc handed out and device_free has not taken
/// back: tensors, weights, scratch): now, and the most at any moment since the process started or the last
/// reset_device_memory_peak. The runtime's pool may keep more reserved.
struct device_memory_use {
  std::size_t in_use = 0, peak = 0;
};
device_memory_use device_memory(int device);
/// Starts the peak over from what is held now.
void reset_device_memory_peak(int device);
/// Waits for the device's stream and returns the memory its pool keeps cached to the driver.
void release_cached_memory(int device);
void stream_synchronize(void* stream);
/// Milliseconds of device time one `launch()` takes on `stream`, the median of `runs` (each between two events
/// recorded around it). Waits for the device. The emulator runs kernels as they are launched: there it is host time.
float median_launch_ms(void* stream, int runs, const std::function<void()>& launch);
/// Opens or closes the profiler's collection range (NVIDIA: `ncu --profile-from-start off` profiles only the
/// kernels launched inside it; AMD and the emulator: nothing). Benchmarks bracket their timed runs with it.
void set_profiler_range(bool open);
void copy_to_device(void* d_dst, const void* src, std::size_t bytes, void* stream);
void copy_to_host(void* dst, const void* d_src, std::size_t bytes, void* stream);
void copy_on_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream);
/// `rows` rows of `row_bytes` bytes, src_pitch apart in d_src, to dst_pitch apart in d_dst (the runtime's 2-D copy).
void copy_rows_on_device(void* d_dst, std::size_t dst_pitch, const void* d_src, std::size_t src_pitch,
                         std::size_t row_bytes, std::size_t rows, void* stream);
void fill_bytes(void* d_dst, int value, std::size_t bytes, void* stream);

// ---- Data movement (src/data_movement.cu) -------------------------------------------------------------------

/// dst(n, c + dst_channel_offset, d, h, w) = src(n, c, d, h, w) for every element of src, converting the element
/// type. Serves convert (offset 0, equal shapes) and N-ary channel concatenation (one call per part).
void launch_copy(const launch_env& env, dtype src_type, const void* d_src, const strided5& src, dtype dst_type,
                 void* d_dst, const strided5& dst, std::int64_t dst_channel_offset);

/// 3-D max or average pooling, cubic window `kernel`, stride = kernel, no padding, floor mode.
void launch_pool3d(const launch_env& env, dtype type, const void* d_in, const strided5& in, bool max_mode, int kernel,
                   void* d_out, const strided5& out);

/// Swin patch merging gather: out(n, k*C + c, z, y, x) = in(n, c, 2z + off[k][0], 2y + off[k][1], 2x + off[k][2]).
void launch_patch_merge_gather(const launch_env& env, dtype type, const void* d_in, const strided5& in,
                               const std::array<std::array<int, 3>, 8>& offsets, void* d_out, const strided5& out);

// ---- Normalisation (src/norm.cu) ----------------------------------------------------------------------------

/// InstanceNorm's moments of a tensor x are records of 3 floats {count, mean, M2} (positions, their mean, the sum
/// of their squared deviations, in float32), `chunks` per (sample, channel): record ((n*C + c)*chunks + k)*3. A
/// statistics pass over x writes them (launch_instance_norm_moments), or the convolution that stores x
/// (launch_conv3d with a moment_sink). Bytes for either: instance_norm_records_bytes(x).
std::size_t instance_norm_records_bytes(const strided5& x);
/// The statistics pass: x's records into d_records (instance_norm_records_bytes(x)); returns the records per
/// (sample, channel).
std::int64_t launch_instance_norm_moments(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                                          float* d_records);
/// d_stats (nc, 2) = {mean, 1/sqrt(var + eps)} of nc channels' records, merged in float64 in a fixed order; d_stats
/// 16-byte aligned (the convolutions that normalise on load read it in 16-byte loads).
void launch_instance_norm_finalize(const launch_env& env, const float* d_records, std::int64_t nc, std::int64_t chunks,
                                   float eps, float* d_stats);
/// Scratch bytes launch_instance_norm and launch_instance_norm_statistics need for a tensor of this shape.
std::size_t instance_norm_scratch_bytes(const strided5& x);
/// The statistics of x for InstanceNorm (the pass, then the finalize) as (N*C, 2) pairs {mean, 1/sqrt(var + eps)}
/// at the returned pointer inside `d_scratch` (instance_norm_scratch_bytes(x)).
const float* launch_instance_norm_statistics(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                                             float eps, void* d_scratch);
/// x = act((x - mean) * inv + r) in place with x's statistics d_stats; r = the residual, or the residual normalised
/// by its own statistics d_residual_stats where given (a projected residual); act = LeakyReLU(negative_slope) when
/// has_slope.
void launch_instance_norm_apply(const launch_env& env, dtype type, void* d_x, const strided5& x, const float* d_stats,
                                const void* d_residual, const strided5& residual, const float* d_residual_stats,
                                bool has_slope, float negative_slope);
/// x = act(InstanceNorm(x) + residual) in place: the statistics, then the apply. `d_scratch` holds
/// instance_norm_scratch_bytes(x).
void launch_instance_norm(const launch_env& env, dtype type, void* d_x, const strided5& x, const void* d_residual,
                          const strided5& residual, float eps, bool has_slope, float negative_slope, void* d_scratch);

/// y[r] = LayerNorm(x[r]) * gamma + beta over rows of `channels` values (gamma/beta float32 device arrays or
/// null). x and y may alias.
void launch_layer_norm(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int channels,
                       const float* d_gamma, const float* d_beta, float eps, void* d_y);

/// Bytes of the LayerNorm statistics of `rows` rows.
std::size_t layer_norm_statistics_bytes(std::int64_t rows);
/// d_stats (rows, 2) = {mean, 1/sqrt(var + eps)} of each row of `channels` values, as launch_layer_norm takes them.
void launch_layer_norm_statistics(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int channels,
                                  float eps, float* d_stats);

// ---- Norms applied by the GEMMs to their input on load (the normalised tensor is never written) -------------

/// act(InstanceNorm(in)) read by a convolution: the statistics of `in` (launch_instance_norm_statistics, whose
/// result is 16-byte aligned as the convolution's 16-byte loads of them need).
struct instance_norm_args {
  const float* stats = nullptr;
  bool has_slope = false;
  float negative_slope = 0.0f;
};

/// LayerNorm of each input row of a linear or of window attention's qkv product.
struct layer_norm_args {
  const float* gamma = nullptr;  ///< (channels) float32 or null
  const float* beta = nullptr;   ///< (channels) float32 or null
  float eps = 1e-5f;
};

// ---- GEMMs (src/gemm_linear.cu, conv3d.cu, conv_transpose3d.cu; self-tests: src/self_tests.cu) ----------------------

/// A product in int8 (precision::int8, docs/int8.md): its weights are int8 (N, K) rows, quantized per output at
/// load with weight_scales[n] (float32, on the device), and its input is quantized with s_x = input_scale as the
/// GEMM stages it (x / s_x rounded half to even, clamped to [-128, 127]); int32 sums on the int8 matrix cores,
/// scaled back by s_x * weight_scales[n] before the op's epilogue. The activations stay float32 (dtype f32), and
/// the device must have matrix cores enabled (launch_env::matrix_cores).
struct int8_product {
  const float* weight_scales = nullptr;
  float input_scale = 0.0f;
  /// Dynamic scales per tensor (a convolution's, --int8-dynamic): s_x on the device (launch_int8_input_scale), read
  /// by the kernels instead of input_scale; null: input_scale.
  const float* d_input_scale = nullptr;
  /// Dynamic scales per row (a linear's, --int8-dynamic): each A row's own s_x, which the GEMM takes into
  /// d_row_scales (M floats of the launch's scratch) before it multiplies.
  bool per_row = false;
  float* d_row_scales = nullptr;
};

/// Scratch bytes launch_int8_input_scale needs.
std::size_t int8_input_scale_scratch_bytes();
/// The dynamic int8 scale of a convolution's or transposed convolution's input (ops::dynamic_activation_scale:
/// max|x| / 127 over the whole tensor, 1 for an all-zero one) into *d_scale, on the device: x as the convolution
/// reads it, i.e. act(InstanceNorm(x)) with `in_norm`, or the concatenation [x, x2] with d_x2. d_scratch holds
/// int8_input_scale_scratch_bytes().
void launch_int8_input_scale(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                             const instance_norm_args* in_norm, const void* d_x2, const strided5* x2,
                             float* d_scale, void* d_scratch);

/// Runs one fp16 and one bf16 linear (70 x 40 x 72, tails in every dimension) of small integers, whose products
/// and sums are exact, on the matrix cores and in float32 FMA, and the same linear in int8 (scales 1) on the int8
/// matrix cores, and waits: true when fp16 and bf16 agree with FMA bit for bit and int8 gives the exact sums, else
/// false with what differed. The context enables matrix cores only when this holds on the device at hand.
bool matrix_cores_verified(const launch_env& env, std::string* why);
/// Runs one fp16 and one bf16 3x3x3 convolution (96 -> 96 channels over 3 x 9 x 10 positions: partial boxes,
/// padding, two channel chunks and column tiles) of small integers on the warpgroup products and on the halo tile,
/// and waits: true when they agree bit for bit (their sums are exact), else false with what differed. The context
/// uses the warpgroup products only when this holds on the device at hand.
bool warpgroup_mma_verified(const launch_env& env, std::string* why);

/// Scratch bytes launch_linear needs (for the row statistics of a pre-norm, and int8 rows' dynamic scales).
std::size_t linear_scratch_bytes(std::int64_t rows, const layer_norm_args* pre_norm);
/// y[rows, out] (=|+=) act(norm(x[rows, in]) W^T + b), norm the LayerNorm `pre_norm` or none. d_weight is W (out,
/// in) row-major as PyTorch has it, in `type` (weights are stored in the model's storage type: what the matrix
/// cores multiply); the bias stays float32. d_scratch holds linear_scratch_bytes(rows, pre_norm); y must not alias
/// x. With `int8`, d_weight is int8 (int8_product).
void launch_linear(const launch_env& env, dtype type, const void* d_x, std::int64_t rows, int in_features,
                   int out_features, const void* d_weight, const float* d_bias, bool gelu, bool accumulate,
                   void* d_y, const layer_norm_args* pre_norm = nullptr, void* d_scratch = nullptr,
                   const int8_product* int8 = nullptr);

/// Geometry of a 3-D convolution for the implicit GEMM.
struct conv_geometry {
  int cin = 0, cout = 0;
  std::array<int, 3> kernel{}, stride{}, pad{};
};
/// Implicit-GEMM convolution: M = N*Do*Ho*Wo output positions, N = cout, K = kd*kh*kw*cin. d_weight_packed is the
/// PyTorch (cout, cin, kd, kh, kw) weight packed at load in `type` as (cout, K), k = ((a*kh + b)*kw + c)*cin + ci.
/// With `in_norm`, the input is read as act(InstanceNorm(in)). With `d_in2`, the input is the channel
/// concatenation [in, in2] (g.cin = in's channels + in2's, one spatial shape), each part read where it is. With
/// `int8`, the packed weight is int8 (int8_product). With `moments`, the output's InstanceNorm moments are left in
/// moments->records (instance_norm_records_bytes(out)) and their count per channel in moments->chunks: gathered by
/// the box kernels as they store the output, by a statistics pass after the others. Returns the kernel that ran:
/// halo or wgmma (the box kernels), else gemm (the tiled or short-K GEMM), whatever env.kernels.conv asked for.
struct moment_sink {
  float* records = nullptr;
  std::int64_t chunks = 0;
};
conv_kernel_choice launch_conv3d(const launch_env& env, dtype type, const void* d_in, const strided5& in,
                                 const conv_geometry& g, const void* d_weight_packed, const float* d_bias,
                                 void* d_out, const strided5& out, const instance_norm_args* in_norm = nullptr,
                                 const void* d_in2 = nullptr, const strided5* in2 = nullptr,
                                 const int8_product* int8 = nullptr, moment_sink* moments = nullptr);

/// Kernel-2 stride-2 transposed convolution as one GEMM: M = N*D*H*W input positions, N = 8*cout, K = cin.
/// d_weight_packed is the PyTorch (cin, cout, 2, 2, 2) weight packed at load in `type` as (8*cout, cin) with row
/// (a*4 + b*2 + c)*cout + o; with `int8`, in int8 (int8_product; one weight scale per row, each output channel's
/// repeated over the 8 offsets).
void launch_conv_transpose3d(const launch_env& env, dtype type, const void* d_in, const strided5& in, int cout,
                             const void* d_weight_packed, void* d_out, const strided5& out,
                             const int8_product* int8 = nullptr);

// ---- Window attention (src/attention.cu) -----------------------------------------------------------------------

/// One stage's window geometry (an ops::window_plan) and whether this block rolls by the shift.
struct window_geometry {
  std::array<std::int64_t, 3> grid{}, padded{}, windows{};
  std::array<int, 3> window{}, shift{};
  bool shifted = false;
};

/// The parameters of one WindowAttention module on the device: the two weights in the model's storage type, the
/// rest float32.
struct window_attention_args {
  int channels = 0, heads = 0;
  float scale = 1.0f;                     ///< hd^-0.5 as float32
  const void* qkv_weight = nullptr;       ///< (3C, C) as PyTorch has it
  const float* qkv_bias = nullptr;        ///< (3C) or null
  const void* proj_weight = nullptr;      ///< (C, C) as PyTorch has it
  const float* proj_bias = nullptr;       ///< (C) or null
  const float* bias_t = nullptr;          ///< (heads, t, t) as [h][j][i]: the dense relative bias, transposed
  const std::uint8_t* regions = nullptr;  ///< (windows, t) shift-region ids when the block is masked, else null
  /// precision::int8: the qkv and proj products in int8 where their weight_scales are set (the weight then int8),
  /// else in float.
  int8_product qkv_int8, proj_int8;
};

/// Largest head dimension the attention kernel takes.
int window_attention_max_head_dim();
/// Scratch bytes launch_window_attention needs for `batch` samples: token offsets and moments, qkv and attention
/// rows, and int8 rows' dynamic scales.
std::size_t window_attention_scratch_bytes(std::int64_t batch, const window_geometry& g, int channels);
/// x += proj(WindowAttention(qkv(norm(y)))) for token tensors y and x of one shape and strides (any layout; y may
/// be x), norm the LayerNorm `pre_norm` or none: qkv and proj as GEMMs, attention on chip (one block per window
/// and head). d_scratch holds window_attention_scratch_bytes(N, g, channels).
void launch_window_attention(const launch_env& env, dtype type, const void* d_y, const strided5& y,
                             const window_geometry& g, const window_attention_args& args, void* d_x,
                             const strided5& x, void* d_scratch, const layer_norm_args* pre_norm = nullptr);

// ---- Sliding window (src/sliding_window.cu) -------------------------------------------------------------------

/// The windows of one sliding-window run: d_starts holds the window starts of axis 0, then 1, then 2 (int64, in
/// MONAI's order), `count` per axis; roi the window size; d_importance the (rd, rh, rw) float32 weights.
struct window_set {
  const std::int64_t* d_starts = nullptr;
  std::array<int, 3> count{};
  std::array<std::int64_t, 3> roi{};
  const float* d_importance = nullptr;
};

/// sum += prediction * importance over one window, the product rounded before the sum as in MONAI's two tensor
/// ops. prediction: one slot (1, K, rd, rh, rw) of `type`, any strides; d_sum: the float32 view of the same extents
/// where the window lies in the blended volume.
void launch_blend_window(const launch_env& env, dtype type, const void* d_prediction, const strided5& prediction,
                         const float* d_importance, float* d_sum, const strided5& sum);

/// out(n, k, z, y, x) = sum(n, k, z + pad_low[0], y + pad_low[1], x + pad_low[2]) / count there, count being the
/// importance summed over every window of `windows` that covers the voxel, in window order (MONAI's count map,
/// bit for bit, computed per voxel instead of stored). out: (N, K, D, H, W) float32, any strides.
void launch_normalise_window_sum(const launch_env& env, const float* d_sum, const strided5& sum,
                                 const std::array<std::int64_t, 3>& pad_low, const window_set& windows, float* d_out,
                                 const strided5& out);

/// labels(n, 0, z, y, x) = the channel of the largest softmax probability of logits(n, :, z, y, x) (the first
/// on ties; NaN wins, as swinfer::argmax_channels). logits float32 (N, K, D, H, W), labels uint8 (N, 1, D, H, W),
/// any strides; K <= 256.
void launch_softmax_argmax(const launch_env& env, const float* d_logits, const strided5& logits,
                           std::uint8_t* d_labels, const strided5& labels);

}  // namespace swinfer::hip
