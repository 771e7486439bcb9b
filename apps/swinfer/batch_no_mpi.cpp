// swinfer CLI: run_batch_under_mpi in a build without MPI (configure with -DSWINFER_MPI=ON for the real one).
#include <swinfer/core/error.hpp>

#include "batch_workers.hpp"

namespace swinfer_tool::batch {

std::optional<batch_outcome> run_batch_under_mpi(const batch_job&) {
  // Each of several processes started by mpirun or srun would otherwise segment every volume into the same files.
  if (const int processes = mpi_launcher_processes(); processes > 1) {
    swinfer::detail::fail("started as one of ", processes, " MPI processes, but this swinfer was built without MPI: "
                          "configure with -DSWINFER_MPI=ON (docs/distributed.md), or use --jobs N on one machine");
  }
  return std::nullopt;
}

}  // namespace swinfer_tool::batch
