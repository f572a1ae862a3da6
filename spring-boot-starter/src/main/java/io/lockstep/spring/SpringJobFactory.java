package io.lockstep.spring;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.LockstepException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Jobs are beans: a {@link LockstepJob} method's job calls it on its bean; a job of the YAML is
 * the {@link Job} bean named like the job, else the one bean of the YAML's {@code class}. A job
 * with no bean (or several of its class and none named like it) stops the application at startup
 * with one line saying so. The application context owns the beans: the scheduler never closes them.
 */
final class SpringJobFactory implements JobFactory {

    private final ConfigurableListableBeanFactory beans;
    private final String scheduler;
    private final Map<String, AnnotatedJobs.Declared> methods = new HashMap<>();

    SpringJobFactory(ConfigurableListableBeanFactory beans, String scheduler, AnnotatedJobs annotated) {
        this.beans = beans;
        this.scheduler = scheduler;
        annotated.all().forEach(d -> methods.put(d.name(), d));
    }

    /**
     * The bean, which the scheduler now depends on: the context destroys the scheduler (waiting for
     * its drain) before the job's bean, and so before whatever that bean uses.
     */
    private Object used(String beanName) {
        beans.registerDependentBean(beanName, scheduler);
        return beans.getBean(beanName);
    }

    @Override
    public Job create(JobDefinition definition) {
        AnnotatedJobs.Declared method = methods.get(definition.name());
        if (method != null && definition.jobClass().equals(MethodJob.class.getName())) {
            return new MethodJob(used(method.beanName()), method.method());
        }
        if (beans.containsBean(definition.name()) && beans.isTypeMatch(definition.name(), Job.class)) {
            return (Job) used(definition.name());
        }
        Class<?> type;
        try {
            type = ClassUtils.forName(definition.jobClass(), beans.getBeanClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new LockstepException("job " + definition.name() + ": class " + definition.jobClass() + " not found: " + e.getMessage());
        }
        String[] candidates = beans.getBeanNamesForType(type);
        if (candidates.length == 1) {
            return (Job) used(candidates[0]);
        }
        throw new LockstepException("job " + definition.name() + ": " + (candidates.length == 0
                ? "no bean of class " + type.getName() + " and no Job bean named \"" + definition.name()
                        + "\" (declare one, or put @LockstepJob on a bean method)"
                : candidates.length + " beans of class " + type.getName() + " " + Arrays.toString(candidates)
                        + " and none named \"" + definition.name() + "\" (name the job's bean like the job)"));
    }
}
