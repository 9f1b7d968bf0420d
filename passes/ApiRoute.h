// ApiRoute.h: replaces a host module's declarations of named runtime APIs with the preempt runtime's wrappers.
// schedGPU (TPDS'18) §4 (implicit memory management: no source changes); shared by every routing pass.
#ifndef PREEMPT_API_ROUTE_H
#define PREEMPT_API_ROUTE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"

namespace preempt {

// One family of APIs routed to preempt_<name> wrappers of the same signature. `Purpose` ends each remark
// ("cudaMalloc routed to preempt_cudaMalloc (memory admission)"); `Layer` names what a module that defines one of
// the APIs or wrappers is ("allocation", "copy"): its calls are left alone, with a remark saying so. The remark
// names are what -fsave-optimization-record readers match (string literals: remarks keep the reference).
struct ApiFamily {
  llvm::ArrayRef<llvm::StringLiteral> Apis;
  llvm::StringRef Purpose;
  llvm::StringRef Layer;
  llvm::StringRef RoutedRemark;
  llvm::StringRef LayerRemark;
};

// Routes every used API of the family; whether the module changed.
bool routeApis(llvm::Module &M, const ApiFamily &Family);

} // namespace preempt
#endif
