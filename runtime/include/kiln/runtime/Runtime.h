//===- Runtime.h - Everything a Kiln runtime client needs -----------------===//

#ifndef KILN_RUNTIME_RUNTIME_H
#define KILN_RUNTIME_RUNTIME_H

#include "kiln/runtime/Allocator.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/DType.h"
#include "kiln/runtime/Device.h"
#include "kiln/runtime/Executable.h"
#include "kiln/runtime/Program.h"
#include "kiln/runtime/Status.h"
#include "kiln/runtime/ThreadPool.h"

#endif // KILN_RUNTIME_RUNTIME_H
