// swinfer runtime: the onednn backend's models (every precision and layout it implements).
#include <swinfer/backend/onednn.hpp>
#include <swinfer/swinfer.hpp>

#include <swinfer/runtime/backends.hpp>

namespace swinfer::runtime {

std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::onednn, const swinfer::network_choice& choice,
                                                       const swinfer::swin_unetr_config& config,
                                                       const swinfer::state_dict& weights,
                                                       const swinfer::engine_options& options,
                                                       const std::string& weights_name) {
  return swinfer::make_network<swinfer::backend::onednn>(choice, config, weights, options, weights_name);
}

}  // namespace swinfer::runtime
