// swinfer: the one header an embedder includes. Core types, checkpoint and .npy I/O, the SwinUNETR model and the
// default header-only cpu backend. Other backends: #include <swinfer/backend/onednn.hpp> (links libdnnl).
#pragma once

#include "swinfer/version.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/checkpoint.hpp"
#include "swinfer/io/npy.hpp"
#include "swinfer/model/config_json.hpp"
#include "swinfer/model/load.hpp"
#include "swinfer/model/swin_unetr.hpp"
#include "swinfer/model/weights_check.hpp"

#include "swinfer/backend/cpu.hpp"
