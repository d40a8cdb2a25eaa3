import { Module } from '@nestjs/common';
import { Calculator } from './calculator.js';
import { McpConnector } from './mcp-connector.js';
import { ToolCatalog } from './tool-catalog.js';

// AppConfig (for McpConnector) comes from the global ConfigModule.
@Module({
  providers: [{ provide: Calculator, useFactory: () => new Calculator() }, McpConnector, ToolCatalog],
  exports: [ToolCatalog, McpConnector],
})
export class ToolsModule {}
