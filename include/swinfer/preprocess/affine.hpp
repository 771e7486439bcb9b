// swinfer: the small linear algebra of MONAI's spatial transforms, in numpy/LAPACK's operation order.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

#include <Eigen/Core>

#include "swinfer/core/error.hpp"
#include "swinfer/preprocess/image.hpp"

// MONAI rounds output shapes from these results (np.round of exact halves is common: 1 mm slices to 2 mm), so the
// routines below repeat reference LAPACK's arithmetic step by step rather than calling a library that orders it
// differently; for the diagonal and permuted affines of most scans every step is then bit-identical to numpy's.

namespace swinfer::detail {

/// numpy's matmul (BLAS dgemm): every entry summed over k in increasing order.
template <int N, int K, int M>
Eigen::Matrix<double, N, M> matmul(const Eigen::Matrix<double, N, K>& a, const Eigen::Matrix<double, K, M>& b) {
  Eigen::Matrix<double, N, M> c;
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < M; ++j) {
      double sum = 0.0;
      for (int k = 0; k < K; ++k) sum += a(i, k) * b(k, j);
      c(i, j) = sum;
    }
  }
  return c;
}

/// numpy.linalg.solve(a, b): LAPACK dgetrf (partial pivoting, multipliers scaled by the pivot's reciprocal)
/// then dgetrs (forward substitution, back substitution dividing by the pivots).
template <int N, int M>
Eigen::Matrix<double, N, M> lapack_solve(Eigen::Matrix<double, N, N> a, Eigen::Matrix<double, N, M> b,
                                         std::string_view what) {
  for (int k = 0; k < N; ++k) {
    int pivot = k;
    for (int i = k + 1; i < N; ++i) {
      if (std::abs(a(i, k)) > std::abs(a(pivot, k))) pivot = i;
    }
    if (a(pivot, k) == 0.0) fail(what, " is singular");
    a.row(k).swap(a.row(pivot));
    b.row(k).swap(b.row(pivot));
    const double reciprocal = 1.0 / a(k, k);
    for (int i = k + 1; i < N; ++i) a(i, k) *= reciprocal;
    for (int j = k + 1; j < N; ++j) {
      for (int i = k + 1; i < N; ++i) a(i, j) -= a(i, k) * a(k, j);
    }
  }
  for (int j = 0; j < M; ++j) {
    for (int k = 0; k < N; ++k) {
      for (int i = k + 1; i < N; ++i) b(i, j) -= b(k, j) * a(i, k);
    }
    for (int k = N - 1; k >= 0; --k) {
      b(k, j) /= a(k, k);
      for (int i = 0; i < k; ++i) b(i, j) -= b(k, j) * a(i, k);
    }
  }
  return b;
}

/// numpy.linalg.cholesky (lower) of a 3x3 symmetric positive definite matrix, in LAPACK dpotrf2's recursive order.
inline Eigen::Matrix3d lapack_cholesky(const Eigen::Matrix3d& m, std::string_view what) {
  auto root = [&](double v) {
    if (!(v > 0.0)) fail(what, " is not positive definite (a degenerate affine?)");
    return std::sqrt(v);
  };
  Eigen::Matrix3d l = Eigen::Matrix3d::Zero();
  l(0, 0) = root(m(0, 0));
  const double r0 = 1.0 / l(0, 0);
  l(1, 0) = m(1, 0) * r0;
  l(2, 0) = m(2, 0) * r0;
  const double m11 = m(1, 1) + (-l(1, 0)) * l(1, 0);
  const double m21 = m(2, 1) + (-l(1, 0)) * l(2, 0);
  const double m22 = m(2, 2) + (-l(2, 0)) * l(2, 0);
  l(1, 1) = root(m11);
  l(2, 1) = m21 * (1.0 / l(1, 1));
  l(2, 2) = root(m22 + (-l(2, 1)) * l(2, 1));
  return l;
}

/// MONAI's affine_to_spacing: the column norms of the 3x3 part, a zero norm read as 1.
inline Eigen::Vector3d affine_spacing(const affine4& a) {
  Eigen::Vector3d s;
  for (int j = 0; j < 3; ++j) {
    const double norm = std::sqrt(a(0, j) * a(0, j) + a(1, j) * a(1, j) + a(2, j) * a(2, j));
    s[j] = norm == 0.0 ? 1.0 : norm;
  }
  return s;
}

/// The affine of a shift by whole voxels (MONAI's create_translate), as crops and pads record it.
inline affine4 voxel_translation(const extent3& shift) {
  affine4 t = affine4::Identity();
  for (int a = 0; a < 3; ++a) t(a, 3) = static_cast<double>(shift[static_cast<std::size_t>(a)]);
  return t;
}

/// MONAI's MetaTensor affine update: the new affine is the old one times the step's voxel transform.
inline affine4 compose(const affine4& affine, const affine4& voxel_transform) { return matmul(affine, voxel_transform); }

}  // namespace swinfer::detail
