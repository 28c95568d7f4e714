import { nestProject } from '../nest.project.js';

export default nestProject(import.meta.url, 'nestjs-v10');
