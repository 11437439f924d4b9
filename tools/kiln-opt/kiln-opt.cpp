// mlir-opt with Kiln's dialects, passes and pipelines registered.
#include "kiln/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerAllKilnDialects(registry);
  kiln::registerAllKilnPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
